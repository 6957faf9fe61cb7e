// The auth server's error catalogue. OAuthError carries the RFC 6749 / 6750 / 7009 `error` code and
// a client-safe description; causes and details go to the logs only, never to the client.

/** Error codes of RFC 6749 sections 4.1.2.1 and 5.2 (plus invalid_token from RFC 6750). */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'invalid_scope'
  | 'access_denied'
  | 'server_error'
  | 'temporarily_unavailable'
  | 'unsupported_token_type'
  | 'invalid_token'
  // OpenID Connect Core 3.1.2.6, returned on the redirect only.
  | 'login_required'
  | 'consent_required'
  | 'interaction_required';

const statusByCode: Record<OAuthErrorCode, number> = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  unauthorized_client: 400,
  unsupported_grant_type: 400,
  unsupported_response_type: 400,
  invalid_scope: 400,
  access_denied: 403,
  server_error: 500,
  temporarily_unavailable: 503,
  unsupported_token_type: 400,
  invalid_token: 401,
  login_required: 400,
  consent_required: 400,
  interaction_required: 400,
};

export class OAuthError extends Error {
  readonly error: OAuthErrorCode;
  readonly status: number;
  /** Set when the client tried HTTP Basic: the 401 must carry WWW-Authenticate (RFC 6749 5.2). */
  readonly basicChallenge: boolean;
  /** Set on a 429: seconds until the client may try again (the Retry-After header). */
  readonly retryAfterSeconds: number | undefined;
  constructor(
    error: OAuthErrorCode,
    description: string,
    options: {
      basicChallenge?: boolean;
      cause?: unknown;
      tooManyRequests?: { retryAfterSeconds: number };
    } = {},
  ) {
    super(description, { cause: options.cause });
    this.name = 'OAuthError';
    this.error = error;
    this.status = options.tooManyRequests !== undefined ? 429 : statusByCode[error];
    this.basicChallenge = options.basicChallenge ?? false;
    this.retryAfterSeconds = options.tooManyRequests?.retryAfterSeconds;
  }

  /** The RFC 6749 section 5.2 JSON body. */
  toJSON(): { error: OAuthErrorCode; error_description: string } {
    return { error: this.error, error_description: this.message };
  }
}

/** A problem shown to the person in the browser as an HTML page, never as a redirect. */
export class PageError extends Error {
  readonly status: number;
  readonly title: string;
  constructor(status: number, title: string, message: string) {
    super(message);
    this.name = 'PageError';
    this.status = status;
    this.title = title;
  }
}
