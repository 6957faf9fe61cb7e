// A Redis URL with credentials (`redis://:pass@host`, `rediss://user:pass@host`, or a user alone)
// belongs in a Secret: a plain URL is copied into ConfigMaps and env values, readable by whoever
// may read those. One pattern for every place that refuses one (the operator's settings, a
// route's spec.redis.url in zod and in CEL); it is RE2 and JavaScript alike, so the CRD's rule
// uses it verbatim. The chart's _helpers.tpl (portcullis.plainRedisUrl) spells the same pattern.

/** Userinfo before the host: anything up to an `@` ahead of the first `/` after the scheme. */
export const REDIS_URL_CREDENTIALS_PATTERN = '^rediss?://[^/]*@';
const credentials = new RegExp(REDIS_URL_CREDENTIALS_PATTERN);

export function redisUrlHasCredentials(url: string): boolean {
  return credentials.test(url);
}

/** Why such a URL is refused and where it goes instead; `secretSetting` names the Secret reference to use. */
export function redisUrlCredentialsMessage(secretSetting: string): string {
  return `holds credentials; put the URL in a Secret and name it in ${secretSetting} (name/key)`;
}
