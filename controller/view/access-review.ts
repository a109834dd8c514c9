// Asks the API server whether a user may do something: a SubjectAccessReview, so the cluster's own
// authorizers (RBAC, webhooks) decide, never a rule of ours. An error answers "no".
import type { KubeHttpClient } from '../../kube/http.js';
import type { UserInfo } from './front-proxy.js';

export interface ResourceAttributes {
  group: string;
  resource: string;
  subresource?: string;
  verb: string;
  namespace: string;
  name: string;
}

export interface AccessDecision {
  allowed: boolean;
  reason: string;
}

export async function reviewAccess(http: KubeHttpClient, user: UserInfo, attrs: ResourceAttributes): Promise<AccessDecision> {
  const body = {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: { user: user.username, ...(user.uid ? { uid: user.uid } : {}), groups: user.groups, extra: user.extra, resourceAttributes: attrs },
  };
  try {
    const res = await http.request<{ status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string } }>({
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      body,
    });
    const s = res.status ?? {};
    return { allowed: s.allowed === true && s.denied !== true, reason: s.reason || s.evaluationError || '' };
  } catch (err) {
    return { allowed: false, reason: `the access review failed: ${(err as Error).message}` };
  }
}

/** The first of `reviews` the user is denied, named for a refusal message ("get worlds/log in …"), or undefined when all allow. */
export async function firstDenied(http: KubeHttpClient, user: UserInfo, reviews: readonly ResourceAttributes[]): Promise<{ what: string; reason: string } | undefined> {
  for (const attrs of reviews) {
    const d = await reviewAccess(http, user, attrs);
    if (!d.allowed) return { what: `${attrs.verb} ${attrs.resource}${attrs.subresource ? `/${attrs.subresource}` : ''} in ${attrs.group}`, reason: d.reason };
  }
  return undefined;
}
