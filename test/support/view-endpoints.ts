// The endpoints of the view API's Service when the controller runs as a local process: the test control
// plane has no controller-manager to make them, and aggregator routing dials exactly these (an address
// of the test's own veth pair, test-host-address.ts: loopback is refused for endpoints).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ControlPlane } from '../../scripts/controlplane/harness.js';
import { kc } from './wait.js';

export function viewEndpointsYaml(namespace: string, service: string, host: string, port: number): string {
  return `apiVersion: v1
kind: Endpoints
metadata: { name: ${service}, namespace: ${namespace} }
subsets:
- addresses: [{ ip: ${host} }]
  ports: [{ name: https, port: ${port} }]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: ${service}-local
  namespace: ${namespace}
  labels: { kubernetes.io/service-name: ${service} }
addressType: IPv4
endpoints: [{ addresses: [${host}], conditions: { ready: true } }]
ports: [{ name: https, port: ${port}, protocol: TCP }]
`;
}

/** Waits until the API server reports the view APIService Available, or throws with its status. */
export async function waitViewAvailable(cp: ControlPlane): Promise<void> {
  const name = 'apiservice/v1alpha1.view.worldline.dev';
  const r = await cp.kubectl(['wait', '--for=condition=Available', '--timeout=60s', name]);
  if (r.code !== 0) {
    const got = await cp.kubectl(['get', name, '-o', 'yaml']);
    throw new Error(`the view APIService never became Available:\n${got.stdout}${got.stderr}`);
  }
}

/** Writes a Secret's data (as the kubelet mounts it) into `dir`; returns `dir`. */
export async function secretToDir(cp: ControlPlane, namespace: string, name: string, dir: string): Promise<string> {
  const s = JSON.parse(await kc(cp, ['get', 'secret', name, '-n', namespace, '-o', 'json'])) as { data?: Record<string, string> };
  if (!s.data?.['tls.crt'] || !s.data['tls.key']) throw new Error(`Secret ${namespace}/${name} has no tls.crt and tls.key`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const [k, v] of Object.entries(s.data)) writeFileSync(join(dir, k), Buffer.from(v, 'base64'), { mode: 0o600 });
  return dir;
}
