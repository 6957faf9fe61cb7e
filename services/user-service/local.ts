// `make run` description of the user service (lib/local-program.ts).
import type { LocalProgramFactory } from '../../lib/local-program.ts';

const port = 8081;

const userService: LocalProgramFactory = () => ({
  name: 'user-service',
  entry: 'services/user-service/main.ts',
  port,
  env: { PORT: String(port) },
  notes: [`readiness: curl http://localhost:${port}/healthcheck/ready`],
});

export default userService;
