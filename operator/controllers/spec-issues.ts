// A zod error as one line naming each bad field by its path (for status messages and events).
import type { z } from 'zod';

export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.length === 0 ? '(root)' : i.path.join('.')}: ${i.message}`)
    .join('; ');
}
