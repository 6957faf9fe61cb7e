// grant_type -> handler. `authorization_token` is the name the Portcullis sign-in contract uses for
// the code grant, accepted as an alias of RFC 6749's `authorization_code`.
import { authorizationCodeGrant } from './authorization-code.ts';
import { refreshTokenGrant } from './refresh-token.ts';
import type { Grant } from './types.ts';

export const grants: ReadonlyMap<string, Grant> = new Map([
  ['authorization_code', authorizationCodeGrant],
  ['authorization_token', authorizationCodeGrant],
  ['refresh_token', refreshTokenGrant],
]);
