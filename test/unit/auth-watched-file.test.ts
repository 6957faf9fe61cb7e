// The clients/users/keys files are re-read when they change; a bad new version keeps the old one.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { watchFile } from '../../services/auth-server/watched-file.ts';

describe('watched file', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'watched-'));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('re-reads a changed file at most once per interval and keeps the previous content on a bad version', () => {
    const file = path.join(dir, 'x.json');
    writeFileSync(file, '{"v":1}');
    let t = 0;
    const errors: string[] = [];
    const w = watchFile({
      path: file,
      parse: (text) => JSON.parse(text) as { v: number },
      checkMs: 1000,
      now: () => t,
      onError: (_p, e) => errors.push(String(e)),
    });
    expect(w.current().v).toBe(1);
    writeFileSync(file, '{"v":22}');
    expect(w.current().v).toBe(1); // within the interval: not checked
    t = 1000;
    expect(w.current().v).toBe(22);
    writeFileSync(file, '{"v":');
    t = 2000;
    expect(w.current().v).toBe(22);
    expect(errors).toHaveLength(1);
    writeFileSync(file, '{"v":333}');
    t = 3000;
    expect(w.current().v).toBe(333);
  });
});
