// The auth server's users file (AUTH_USERS_FILE): the JSON document of who may sign in, with their
// password hashes (passwords.ts makes them) and the claims released about them; this schema is its
// single source.
import { z } from 'zod';

/** PHC string `$scrypt$ln=<log2 N>,r=<r>,p=<p>$<salt b64>$<hash b64>` (see passwords.ts). */
export const passwordHashSchema = z
  .string()
  .regex(
    /^\$scrypt\$ln=\d{1,2},r=\d{1,2},p=\d{1,2}\$[A-Za-z0-9+/]+={0,2}\$[A-Za-z0-9+/]+={0,2}$/,
    'expected $scrypt$ln=..,r=..,p=..$salt$hash',
  );

/** Profile claims released to clients by scope: `profile` and `email` (OpenID Connect claim names). */
export const profileClaimsSchema = z
  .object({
    name: z.string().max(200).optional(),
    given_name: z.string().max(200).optional(),
    family_name: z.string().max(200).optional(),
    preferred_username: z.string().max(200).optional(),
    picture: z.url().optional(),
    locale: z.string().max(35).optional(),
    zoneinfo: z.string().max(64).optional(),
    email: z.email().optional(),
    email_verified: z.boolean().optional(),
  })
  .strict();
export type ProfileClaims = z.infer<typeof profileClaimsSchema>;

export const userRecordSchema = z
  .object({
    username: z.string().regex(/^[A-Za-z0-9._@-]{1,64}$/, 'username: 1-64 of A-Z a-z 0-9 . _ @ -'),
    password_hash: passwordHashSchema,
    profile: profileClaimsSchema.default({}),
    groups: z
      .array(
        z
          .string()
          .regex(/^[\x21-\x7E]{1,128}$/, 'a group: 1-128 printable ASCII characters, no space'),
      )
      .max(256)
      .optional()
      .describe('Group names, released by the groups scope (the groups claim)'),
  })
  .strict();
export type UserRecord = z.infer<typeof userRecordSchema>;

export const usersFileSchema = z
  .object({ users: z.array(userRecordSchema) })
  .strict()
  .refine(
    (f) => new Set(f.users.map((u) => u.username)).size === f.users.length,
    'usernames are unique',
  );
export type UsersFile = z.infer<typeof usersFileSchema>;
