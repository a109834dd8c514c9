// The worldline API group and version. Every kind in crds/ is served under this group/version.

/** API group of every worldline custom resource. */
export const GROUP = 'worldline.dev';

/** The only served (and storage) version. */
export const VERSION = 'v1alpha1';

/** The `apiVersion` value written in every worldline manifest. */
export const API_VERSION = `${GROUP}/${VERSION}` as const;

/** The aggregated API that reads Worlds (their output and their diff; served by the controller, not a CRD). */
export const VIEW_GROUP = 'view.worldline.dev';
export const VIEW_VERSION = 'v1alpha1';

/** The path of a World's view subresource (`log` or `diff`) under the aggregated API. */
export function worldViewPath(namespace: string, name: string, subresource: 'log' | 'diff'): string {
  return `/apis/${VIEW_GROUP}/${VIEW_VERSION}/namespaces/${encodeURIComponent(namespace)}/worlds/${encodeURIComponent(name)}/${subresource}`;
}
