// Watches the config file for changes: fs.watch on its folder (a Kubernetes ConfigMap volume
// swaps a `..data` symlink, which a watch on the file itself would miss) plus stat polling as a
// fallback, debounced. Calls `onText` with the new content when it differs from the last one.
import { watch, watchFile, unwatchFile, readFile, type FSWatcher } from 'node:fs';
import path from 'node:path';

export interface ConfigWatcherOptions {
  readonly file: string;
  readonly onText: (text: string) => void;
  readonly onError: (err: Error) => void;
  /** The content already loaded (changes are compared against it). */
  readonly initialText: string;
  readonly debounceMs?: number;
  readonly pollIntervalMs?: number;
}

export class ConfigWatcher {
  readonly #options: ConfigWatcherOptions;
  #last: string;
  #timer: NodeJS.Timeout | undefined;
  #watcher: FSWatcher | undefined;
  #closed = false;

  constructor(options: ConfigWatcherOptions) {
    this.#options = options;
    this.#last = options.initialText;
    try {
      this.#watcher = watch(path.dirname(options.file), { persistent: false }, () =>
        this.#schedule(),
      );
      this.#watcher.on('error', () => this.#watcher?.close());
    } catch {
      this.#watcher = undefined; // polling still runs
    }
    watchFile(options.file, { persistent: false, interval: options.pollIntervalMs ?? 1000 }, () =>
      this.#schedule(),
    );
  }

  #schedule(): void {
    if (this.#closed) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#read(), this.#options.debounceMs ?? 100);
    this.#timer.unref();
  }

  #read(): void {
    readFile(this.#options.file, 'utf8', (err, text) => {
      if (this.#closed) return;
      if (err !== null) {
        this.#options.onError(err);
        return;
      }
      if (text === this.#last) return;
      this.#last = text;
      this.#options.onText(text);
    });
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#watcher?.close();
    unwatchFile(this.#options.file);
  }
}
