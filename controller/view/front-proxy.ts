// Who is asking, as the API server vouches for it. The aggregated API is reached only through the API
// server, which authenticates the user and forwards the request with the user in headers (X-Remote-User,
// X-Remote-Group, X-Remote-Extra-*), over TLS with its front-proxy client certificate. Those headers are
// believed only from a client whose certificate chains to the request-header CA and whose common name is
// one the cluster allows — the same rules kube-apiserver publishes for extension servers in
// kube-system/extension-apiserver-authentication. Anything else is anonymous and refused.
import type { TLSSocket } from 'node:tls';
import { objectPath } from '../../kube/api-paths.js';
import type { KubeHttpClient } from '../../kube/http.js';
import { configMapsRef } from '../../kube/resource-ref.js';
import { commonName } from '../../kube/tls-dir.js';

export interface RequestHeaderRules {
  /** PEM of the CA the front proxy's client certificate must chain to. */
  clientCa: string;
  /** Common names allowed for that certificate (empty: any certificate of the CA). */
  allowedNames: string[];
  usernameHeaders: string[];
  uidHeaders: string[];
  groupHeaders: string[];
  extraHeaderPrefixes: string[];
}

export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  extra: Record<string, string[]>;
}

export const AUTH_CONFIGMAP = { namespace: 'kube-system', name: 'extension-apiserver-authentication' };

function jsonList(raw: string | undefined, key: string): string[] {
  if (raw === undefined || raw === '') return [];
  const v: unknown = JSON.parse(raw);
  if (!Array.isArray(v)) throw new Error(`${AUTH_CONFIGMAP.name}: ${key} is not a list of strings`);
  return v.map((x: unknown) => {
    if (typeof x !== 'string') throw new Error(`${AUTH_CONFIGMAP.name}: ${key} is not a list of strings`);
    return x;
  });
}

/** Parses the ConfigMap's data; refuses one without a request-header CA (no front proxy is configured). */
export function parseRequestHeaderRules(data: Record<string, string> | undefined): RequestHeaderRules {
  const clientCa = data?.['requestheader-client-ca-file'];
  if (!clientCa) {
    throw new Error(`${AUTH_CONFIGMAP.namespace}/${AUTH_CONFIGMAP.name} has no requestheader-client-ca-file: the API server is not configured to front extension servers (--requestheader-client-ca-file)`);
  }
  const usernameHeaders = jsonList(data['requestheader-username-headers'], 'requestheader-username-headers');
  if (usernameHeaders.length === 0) throw new Error(`${AUTH_CONFIGMAP.name}: requestheader-username-headers is empty`);
  return {
    clientCa,
    allowedNames: jsonList(data['requestheader-allowed-names'], 'requestheader-allowed-names'),
    usernameHeaders,
    uidHeaders: jsonList(data['requestheader-uid-headers'], 'requestheader-uid-headers'),
    groupHeaders: jsonList(data['requestheader-group-headers'], 'requestheader-group-headers'),
    extraHeaderPrefixes: jsonList(data['requestheader-extra-headers-prefix'], 'requestheader-extra-headers-prefix'),
  };
}

export async function loadRequestHeaderRules(http: KubeHttpClient): Promise<RequestHeaderRules> {
  const cm = await http.request<{ data?: Record<string, string> }>({ path: objectPath(configMapsRef, AUTH_CONFIGMAP.name, AUTH_CONFIGMAP.namespace) });
  return parseRequestHeaderRules(cm.data);
}

/** Headers as received, each name with all its values (a group per X-Remote-Group line: never comma-joined). */
export type DistinctHeaders = NodeJS.Dict<string[]>;

const values = (h: DistinctHeaders, name: string): string[] => h[name.toLowerCase()] ?? [];

/**
 * The user the front proxy names, or why the request is not believed. `socket` must come from a TLS
 * server whose `ca` is the rules' client CA (so `authorized` means "chains to it").
 */
export function authenticateFrontProxy(rules: RequestHeaderRules, socket: TLSSocket, headers: DistinctHeaders): { user: UserInfo } | { refused: string } {
  if (!socket.authorized) return { refused: 'no client certificate of the request-header CA' };
  const cn = commonName(socket.getPeerCertificate());
  if (rules.allowedNames.length > 0 && (cn === undefined || !rules.allowedNames.includes(cn))) return { refused: `front-proxy certificate "${cn ?? ''}" is not an allowed name` };
  const username = rules.usernameHeaders.flatMap((n) => values(headers, n))[0];
  if (!username) return { refused: 'the front proxy named no user' };
  const uid = rules.uidHeaders.flatMap((n) => values(headers, n))[0];
  const groups = rules.groupHeaders.flatMap((n) => values(headers, n));
  const extra: Record<string, string[]> = {};
  for (const prefix of rules.extraHeaderPrefixes) {
    const p = prefix.toLowerCase();
    for (const [name, v] of Object.entries(headers)) {
      if (!name.startsWith(p) || name.length === p.length || v === undefined) continue;
      // Extra keys are percent-encoded in header names (as kube-apiserver sends them); a malformed one is
      // not the API server's, and the whole request is refused rather than read with a key dropped.
      let key: string;
      try {
        key = decodeURIComponent(name.slice(p.length));
      } catch {
        return { refused: `malformed extra header ${name}` };
      }
      extra[key] = [...(extra[key] ?? []), ...v];
    }
  }
  return { user: { username, ...(uid ? { uid } : {}), groups, extra } };
}
