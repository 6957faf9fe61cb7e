// A JSON file that is re-read when it changes (size, mtime or inode: the last one catches the
// symlink swap of a Kubernetes Secret volume). Checked at most every `checkMs` on access, so a
// lookup never waits on the disk more than once per interval. A new version that does not parse
// is logged and the previous content stays in force; only the first load must succeed.
import { readFileSync, statSync } from 'node:fs';

export interface WatchedFileOptions<T> {
  readonly path: string;
  readonly parse: (text: string) => T;
  readonly checkMs: number;
  readonly now: () => number;
  readonly onReload?: (path: string) => void;
  readonly onError?: (path: string, err: unknown) => void;
}

export interface WatchedFile<T> {
  current(): T;
}

export function watchFile<T>(options: WatchedFileOptions<T>): WatchedFile<T> {
  const signature = () => {
    const s = statSync(options.path);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  };
  let seen = signature();
  let value = options.parse(readFileSync(options.path, 'utf8'));
  let checkedAt = options.now();

  return {
    current() {
      const now = options.now();
      if (now - checkedAt < options.checkMs) return value;
      checkedAt = now;
      try {
        const sig = signature();
        if (sig === seen) return value;
        seen = sig;
        value = options.parse(readFileSync(options.path, 'utf8'));
        options.onReload?.(options.path);
      } catch (err) {
        options.onError?.(options.path, err);
      }
      return value;
    },
  };
}
