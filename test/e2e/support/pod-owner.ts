// The Deployment a pod belongs to, from its name and its pod-template-hash label. The hash is the
// template's 32-bit hash written one letter per decimal digit, so it has 1 to 10 letters: a pattern
// on the name alone misses the shorter ones. Pods of no Deployment (a StatefulSet's, a bare pod)
// keep their own name.
export function deploymentOfPod(
  name: string,
  labels: Readonly<Record<string, string>> = {},
): string {
  const hash = labels['pod-template-hash'];
  if (hash === undefined || hash === '') return name;
  const match = new RegExp(`^(.+)-${hash}-[a-z0-9]{5}$`).exec(name);
  return match === null ? name : (match[1] as string);
}
