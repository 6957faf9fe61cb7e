// The decision service's process (process.ts, as the proxy's): HTTP front door on listen, gRPC on
// decision.grpc, admin. Called by main.ts, which reads the environment and the config file, when
// the config says mode: decision.
import type { Logger } from 'pino';
import type { SidecarConfig } from '../lib/config/sidecar.ts';
import { buildDecisionApp } from './decision-app.ts';
import { runSidecarProcess } from './process.ts';

export interface DecisionLaunch {
  readonly file: string;
  /** The config file's text as read at start (the watcher's baseline). */
  readonly text: string;
  readonly config: SidecarConfig;
  readonly logger: Logger;
  readonly now: () => number;
  readonly override: (config: SidecarConfig) => SidecarConfig;
}

export async function runDecisionService(launch: DecisionLaunch): Promise<void> {
  const { logger } = launch;
  const app = buildDecisionApp({
    config: launch.config,
    logger,
    now: launch.now,
    override: launch.override,
  });
  const effective = app.current().config;
  const grpcListen = effective.decision.grpc;
  const l = effective.limiter;
  await runSidecarProcess({
    file: launch.file,
    text: launch.text,
    logger,
    app,
    stopping: 'shutting down: answering the checks under way',
    listeners: [
      { server: app.adminServer, port: effective.admin.port, host: effective.admin.host },
      ...(app.grpcServer !== undefined && grpcListen !== undefined
        ? [{ server: app.grpcServer, port: grpcListen.port, host: grpcListen.host }]
        : []),
      { server: app.httpServer, port: effective.listen.port, host: effective.listen.host },
    ],
    listening: {
      message: 'decision service listening',
      fields: {
        mode: 'decision',
        port: effective.listen.port,
        grpcPort: grpcListen?.port,
        adminPort: effective.admin.port,
        route: effective.route.id,
        path: effective.route.path,
        store: effective.redis === undefined ? 'memory' : 'redis',
        trustedProxies: effective.decision.trustedProxies,
        replenishRate: l.replenishRate,
        burstCapacity: l.burstCapacity,
        requestedTokens: l.requestedTokens,
      },
    },
  });
}
