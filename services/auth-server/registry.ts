// Clients and users, looked up by id from their (re-read on change) files.
import type { ClientRegistry, RegisteredClient } from '../../lib/config/client-registry.ts';
import type { UserRecord, UsersFile } from '../../lib/config/users-file.ts';
import type { WatchedFile } from './watched-file.ts';

export interface Directory {
  client(clientId: string): RegisteredClient | undefined;
  user(username: string): UserRecord | undefined;
  /** Every scope some client may request (advertised in the metadata). */
  allScopes(): string[];
  /** One stored password hash (its scrypt cost is what an unknown username's dummy check uses). */
  anyPasswordHash(): string | undefined;
}

export function createDirectory(
  clients: WatchedFile<ClientRegistry>,
  users: WatchedFile<UsersFile>,
): Directory {
  // Index rebuilt only when the parsed file object changes.
  let clientIndexFor: ClientRegistry | undefined;
  let clientIndex = new Map<string, RegisteredClient>();
  let userIndexFor: UsersFile | undefined;
  let userIndex = new Map<string, UserRecord>();
  const clientMap = () => {
    const file = clients.current();
    if (file !== clientIndexFor) {
      clientIndexFor = file;
      clientIndex = new Map(file.clients.map((c) => [c.client_id, c]));
    }
    return clientIndex;
  };
  return {
    client: (clientId) => clientMap().get(clientId),
    user(username) {
      const file = users.current();
      if (file !== userIndexFor) {
        userIndexFor = file;
        userIndex = new Map(file.users.map((u) => [u.username, u]));
      }
      return userIndex.get(username);
    },
    anyPasswordHash: () => users.current().users[0]?.password_hash,
    allScopes: () => [...new Set([...clientMap().values()].flatMap((c) => c.scopes))].sort(),
  };
}
