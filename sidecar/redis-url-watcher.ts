// Follows the file named by `redis.urlFile` (if any) and calls `onChange` when its content
// changes, e.g. when the kubelet rewrites a mounted Secret after a rotation. The path itself can
// change with a config reload: `follow` moves the watch.
import { readFileSync } from 'node:fs';
import { ConfigWatcher } from './config-watcher.ts';

export interface RedisUrlWatcherOptions {
  readonly onChange: () => void;
  readonly onError: (err: Error) => void;
  readonly pollIntervalMs?: number;
}

export class RedisUrlWatcher {
  readonly #options: RedisUrlWatcherOptions;
  #file: string | undefined;
  #watcher: ConfigWatcher | undefined;

  constructor(options: RedisUrlWatcherOptions) {
    this.#options = options;
  }

  /** Watches `file` from now on (undefined: nothing to watch). */
  follow(file: string | undefined): void {
    if (file === this.#file) return;
    this.#watcher?.close();
    this.#watcher = undefined;
    this.#file = file;
    if (file === undefined) return;
    let initialText = '';
    try {
      initialText = readFileSync(file, 'utf8');
    } catch {
      // Not there yet: the first successful read counts as a change.
    }
    this.#watcher = new ConfigWatcher({
      file,
      initialText,
      onText: () => this.#options.onChange(),
      onError: this.#options.onError,
      ...(this.#options.pollIntervalMs === undefined
        ? {}
        : { pollIntervalMs: this.#options.pollIntervalMs }),
    });
  }

  close(): void {
    this.#watcher?.close();
    this.#watcher = undefined;
  }
}
