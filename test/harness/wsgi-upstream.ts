// Starts test/harness/wsgi-upstream.py (Python's wsgiref) on a free port: a non-Node service
// behind the sidecar, stopped like any other program.
import { freePort } from './ports.ts';
import { startProgram, type RunningService } from './programs.ts';

export async function startWsgiUpstream(): Promise<RunningService> {
  const port = await freePort();
  const program = await startProgram({
    entry: 'test/harness/wsgi-upstream.py',
    node: 'python3',
    args: [String(port)],
    waitPort: port,
    name: 'wsgi-upstream',
  });
  return { program, port, url: `http://127.0.0.1:${port}` };
}
