// Tests that need root (namespaces, mounts, cgroups, file owners) fail when not run as root, saying so:
// a skipped security test would pass for a green one.
export function requireRoot(what: string): void {
  if (process.getuid?.() !== 0) throw new Error(`${what} needs root (namespaces, mounts, cgroups, file owners): run it as root, e.g. sudo npm run test:kernel`);
}
