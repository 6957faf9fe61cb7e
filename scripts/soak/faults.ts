// The soak's faults (scripts/soak.ts), on a schedule until 8 s before the end: Redis SIGKILLed and
// restarted, the upstream restarted, sidecar A's config file changed (Spring headers on and off);
// and past mid-run one auth-server replica SIGKILLed, then restarted 10 s later.
import path from 'node:path';
import { startProgram, type Program } from '../../test/harness/programs.ts';
import { AUTH_SERVER_AS_DEPLOYED } from '../../test/harness/auth-stack.ts';
import { DURATION_MS, now, RULE, sleep, type Interval, type Timeline } from './common.ts';
import { redisAnswers, type SoakProcesses } from './processes.ts';

/** Injects the faults, recording each in the timeline (its window, or the config change). */
export async function faultLoop(p: SoakProcesses, tl: Timeline): Promise<void> {
  const { stack, redis, allowA, replicaRestarts } = p;
  const { t0, end, redisDown, upstreamDown, configChanges, replicaDown, faults } = tl;
  let springOnA = false;
  const plan = ['redis', 'upstream', 'config', 'redis', 'config', 'upstream'];
  let k = 0;
  let replicaKilled = false;
  let replicaRestarted = false;
  while (now() < end - 8000) {
    await sleep(Math.min(6000, end - 8000 - now()));
    if (now() >= end - 8000) break;
    if (!replicaKilled && now() - t0 > DURATION_MS / 2) {
      replicaKilled = true;
      const victim = stack.programs.find((p) => p.name === 'auth-server-1') as Program;
      replicaDown.push({ start: now(), end: Infinity });
      victim.child.kill('SIGKILL');
      faults.push('auth-server replica SIGKILL');
      continue;
    }
    if (replicaKilled && !replicaRestarted && now() - t0 > DURATION_MS / 2 + 10_000) {
      replicaRestarted = true;
      const port = new URL(stack.authUrls[1] as string).port;
      replicaRestarts.push(
        await startProgram({
          name: 'auth-server-1-restarted',
          entry: AUTH_SERVER_AS_DEPLOYED.entry,
          waitPort: Number(port),
          env: {
            ...AUTH_SERVER_AS_DEPLOYED.env,
            PORT: port,
            HOST: '127.0.0.1',
            AUTH_METRICS_PORT: '0',
            AUTH_ISSUER: stack.issuer,
            AUTH_CLIENTS_FILE: stack.clientsFile,
            AUTH_USERS_FILE: path.join(stack.dir, 'users.json'),
            AUTH_KEYS_FILE: path.join(stack.dir, 'keys.json'),
            AUTH_FILE_CHECK_MS: '100',
            LOG_LEVEL: 'info',
            REDIS_URL: redis.url,
            AUTH_SIGNIN_USER_BURST: '1000000',
            AUTH_SIGNIN_ADDRESS_BURST: '1000000',
            AUTH_SIGNIN_USER_PER_MINUTE: '1000000',
            AUTH_SIGNIN_USER_ADDRESS_PER_MINUTE: '1000000',
            AUTH_SIGNIN_USER_ADDRESS_BURST: '1000000',
            AUTH_SIGNIN_ADDRESS_PER_MINUTE: '1000000',
          },
        }),
      );
      (replicaDown[0] as Interval).end = now();
      faults.push('auth-server replica restarted');
      continue;
    }
    const fault = plan[k++ % plan.length];
    if (fault === 'redis') {
      const w: Interval = { start: now(), end: Infinity };
      redisDown.push(w);
      await redis.kill();
      await sleep(2000);
      w.restartAt = now();
      await redis.start();
      await redisAnswers(redis.port);
      w.end = now();
      faults.push('redis SIGKILL + restart');
    } else if (fault === 'upstream') {
      const w: Interval = { start: now(), end: Infinity };
      upstreamDown.push(w);
      await p.upstream.stop('SIGTERM');
      await sleep(1000);
      await p.startUpstream();
      w.end = now();
      faults.push('upstream restart');
    } else {
      springOnA = !springOnA;
      allowA.write({
        ...allowA.config,
        limiter: {
          ...RULE,
          onStoreError: 'allow',
          headers: { fields: true, draft: false, spring: springOnA },
        },
      });
      configChanges.push({ at: now(), spring: springOnA });
      faults.push(`sidecar config change (spring headers ${springOnA ? 'on' : 'off'})`);
    }
  }
}
