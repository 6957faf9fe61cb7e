// The one place that leans on ioredis' internals: a command whose wire form (RESP) the caller has
// written, sent through ioredis so that ioredis still routes it (on a Cluster by its first key),
// queues it, pipelines it and decodes the reply. It subclasses ioredis' Command and overrides
// toWritable(), which ioredis calls to get the bytes it writes to the socket. None of that is
// ioredis' documented API: test/integration/ioredis-raw-command.test.ts holds these assumptions to
// the installed ioredis and names the version they were checked with (CHECKED_IOREDIS), so an
// upgrade fails that one test instead of production.
//
// Assumptions:
//   - `new Command(name, args, { replyEncoding: 'utf8' })` routes and queues by `name` and `args`
//     (the keys of EVAL/EVALSHA after numkeys) and answers a bulk string reply as a JS string;
//   - the bytes written for a command are exactly what toWritable() returns, on a client and in a
//     pipeline (Redis, Cluster and Pipeline all take a Command through sendCommand);
//   - an error reply rejects command.promise with an Error whose message is Redis' ("NOSCRIPT ...").
import { Command, type Cluster, type Pipeline, type Redis } from 'ioredis';

/** The ioredis version the assumptions above were last checked with. */
export const CHECKED_IOREDIS = '6.0.0';

/** Where a command can go: a client (one node, Sentinel, Cluster) or a pipeline of one. */
export type RawTarget = Redis | Cluster | Pipeline;

/** A command written by its caller: `route` is what ioredis routes by, `wire` what goes to Redis. */
export class RawCommand extends Command {
  readonly #wire: string;

  /** `name` and `route`: the command and the arguments ioredis routes by; `wire`: the whole command, RESP-encoded. */
  constructor(name: string, route: readonly (string | number)[], wire: string) {
    super(name, route as (string | number)[], { replyEncoding: 'utf8' });
    this.#wire = wire;
  }

  override toWritable(): string {
    return this.#wire;
  }
}

/** Sends `wire` on `target` as the command `name` routed by `route`; resolves with the decoded reply. */
export function sendRaw(
  target: RawTarget,
  name: string,
  route: readonly (string | number)[],
  wire: string,
): Promise<unknown> {
  const command = new RawCommand(name, route, wire);
  target.sendCommand(command);
  return command.promise;
}

/** One RESP bulk string. */
export const bulk = (arg: string): string => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
