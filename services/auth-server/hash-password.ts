// Prints the scrypt hash of a password for the users file (usersFileSchema.password_hash).
//   node services/auth-server/hash-password.ts            (reads the password from stdin)
//   echo -n 'secret' | node services/auth-server/hash-password.ts
// The password is never taken from argv (it would land in shell history and `ps`).
import { hashPassword } from '../../lib/config/passwords.ts';

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('password (then Enter): ');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) {
    chunks.push(chunk as Buffer);
    if (process.stdin.isTTY && chunks.join('').includes('\n')) break;
  }
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

const password = await readStdin();
if (password.length === 0) {
  process.stderr.write('hash-password: empty password\n');
  process.exit(2);
}
process.stdout.write(`${await hashPassword(password)}\n`);
