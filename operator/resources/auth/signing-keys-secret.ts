// The auth server's token-signing keys (keys.json, signingKeysFileSchema): generated once, then
// rotated on a timer. A rotation prepends a new key (it signs from then on); an older key stays
// published in the JWKS until every token it signed has expired (access-token lifetime after the
// next key took over), then it is dropped. When each key was created is kept in an annotation,
// because the keys file itself has no room for it.
import type { V1Secret } from '@kubernetes/client-node';
import {
  signingKeysFileSchema,
  type SigningKeysFile,
} from '../../../lib/config/signing-keys-file.ts';
import type { KubeObject } from '../../runtime/kube-object.ts';
import { SIGNING_KEYS_KEY, SIGNING_KEYS_SECRET } from './names.ts';
import {
  base64,
  authServerLabels,
  fromBase64,
  type Owner,
  sortedOwnerRefs,
} from '../shared/metadata.ts';
import type { ResourceSettings } from '../shared/settings.ts';

export const KEYS_CREATED_ANNOTATION = 'portcullis.dev/keys-created-at';
/** Published keys are dropped this long after their tokens could last have expired, ms (clock skew). */
const RETIRE_MARGIN_MS = 60_000;

export interface SigningKeysState {
  file: SigningKeysFile;
  /** kid -> creation time, ms since the epoch. */
  createdAt: Record<string, number>;
}

/** The state held by a Secret; undefined when missing or unreadable (then a new key is generated). */
export function signingKeysStateOf(secret: KubeObject | undefined): SigningKeysState | undefined {
  const data = secret?.['data'];
  if (secret === undefined || typeof data !== 'object' || data === null) return undefined;
  const text = fromBase64((data as Record<string, unknown>)[SIGNING_KEYS_KEY]);
  if (text === undefined) return undefined;
  let file: SigningKeysFile;
  try {
    const parsed = signingKeysFileSchema.safeParse(JSON.parse(text));
    if (!parsed.success) return undefined;
    file = parsed.data;
  } catch {
    return undefined;
  }
  const createdAt: Record<string, number> = {};
  try {
    const raw: unknown = JSON.parse(secret.metadata.annotations?.[KEYS_CREATED_ANNOTATION] ?? '{}');
    if (typeof raw === 'object' && raw !== null) {
      for (const [kid, at] of Object.entries(raw)) if (typeof at === 'number') createdAt[kid] = at;
    }
  } catch {
    // unknown creation times: treated as "now" below, so nothing is rotated or dropped early
  }
  return { file, createdAt };
}

export interface SigningKeysPlan {
  /** Generate a new key and put it first (none yet, or the current one is due for rotation). */
  generate: boolean;
  /** The keys to keep (after the new one, if any), newest first. */
  keep: SigningKeysFile['keys'];
  /** When to look again (the next rotation or retirement), ms from now; undefined: never. */
  recheckInMs: number | undefined;
}

export function planSigningKeys(
  state: SigningKeysState | undefined,
  nowMs: number,
  settings: Pick<ResourceSettings, 'accessTokenTtlSeconds' | 'signingKeyRotationMs'>,
): SigningKeysPlan {
  if (state === undefined)
    return {
      generate: true,
      keep: [],
      recheckInMs: settings.signingKeyRotationMs > 0 ? settings.signingKeyRotationMs : undefined,
    };
  const keys = state.file.keys;
  const created = (kid: string) => state.createdAt[kid] ?? nowMs;
  const [current] = keys;
  const rotate =
    current !== undefined &&
    settings.signingKeyRotationMs > 0 &&
    nowMs - created(current.kid) >= settings.signingKeyRotationMs;
  const graceMs = settings.accessTokenTtlSeconds * 1000 + RETIRE_MARGIN_MS;
  const recheck: number[] = [];
  // Key i stopped signing when key i-1 was created (or now, if a rotation happens now for i = 0).
  const keep = keys.filter((key, i) => {
    if (i === 0) return true;
    const prev = keys[i - 1];
    const retiredAt = prev === undefined ? nowMs : created(prev.kid);
    const dropAt = retiredAt + graceMs;
    if (nowMs >= dropAt) return false;
    recheck.push(dropAt - nowMs);
    return true;
  });
  if (rotate) recheck.push(graceMs);
  if (settings.signingKeyRotationMs > 0)
    recheck.push(
      rotate
        ? settings.signingKeyRotationMs
        : Math.max(0, created(current?.kid ?? '') + settings.signingKeyRotationMs - nowMs),
    );
  return {
    generate: rotate,
    keep,
    recheckInMs: recheck.length === 0 ? undefined : Math.max(1000, Math.min(...recheck)),
  };
}

export function signingKeysSecret(
  namespace: string,
  state: SigningKeysState,
  owners: readonly Owner[],
): KubeObject {
  const createdAt = Object.fromEntries(
    state.file.keys.map((k) => [k.kid, state.createdAt[k.kid] ?? 0]),
  );
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: SIGNING_KEYS_SECRET,
      namespace,
      labels: authServerLabels('signing-keys'),
      annotations: { [KEYS_CREATED_ANNOTATION]: JSON.stringify(createdAt) },
      ownerReferences: sortedOwnerRefs(owners),
    },
    type: 'Opaque',
    data: { [SIGNING_KEYS_KEY]: base64(`${JSON.stringify(state.file, null, 2)}\n`) },
  } satisfies V1Secret;
}
