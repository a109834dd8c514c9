// The worldline API group and version. Every kind in crds/ is served under this group/version.

/** API group of every worldline custom resource. */
export const GROUP = 'worldline.dev';

/** The only served (and storage) version. */
export const VERSION = 'v1alpha1';

/** The `apiVersion` value written in every worldline manifest. */
export const API_VERSION = `${GROUP}/${VERSION}` as const;
