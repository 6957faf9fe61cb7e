// The few parts of oidc-provider's API the benchmark peer uses (the package ships no types).
declare module 'oidc-provider' {
  import type { Server } from 'node:http';

  export interface ProviderClient {
    grantTypeAllowed(type: string): boolean;
  }

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    listen(port: number, host?: string): Server;
    on(event: 'server_error', listener: (ctx: unknown, err: Error) => void): this;
  }
}

declare module 'oidc-provider/lib/adapters/memory_adapter.js' {
  /** The provider's in-memory adapter; `store` is any object with get, set(key, value, { maxAge }) and delete. */
  export default class MemoryAdapter {
    constructor(model: string, store: unknown, clockTolerance?: number);
  }
}
