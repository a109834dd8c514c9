// The network disposition and isolation request schemas shared by Worlds and Policies.
import { z } from 'zod';
import { celChecked, listType, uniqueBy } from './cel.js';
import { ISOLATION_CONTROLS, ISOLATION_LEVELS } from './isolation-vocabulary.js';
import { NETWORK_POLICIES } from './outcomes.js';

// ---- Network -----------------------------------------------------------------------------------------------

/** `host:port`: a DNS name or IPv4 address, or a bracketed IPv6 address, then a decimal port. */
export const HOST_PORT_PATTERN =
  '^(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*):[0-9]{1,5}$';

function portOf(hostPort: string): number {
  return Number(hostPort.slice(hostPort.lastIndexOf(':') + 1));
}

/** One `host:port` allowlist entry. */
export function hostPort(field: string, description: string) {
  const s = z
    .string()
    .min(3)
    .max(262)
    .regex(new RegExp(HOST_PORT_PATTERN), { message: `${field} entries must have the form host:port` })
    .describe(description);
  return celChecked(
    s,
    {
      rule:
        `!self.matches(r'${HOST_PORT_PATTERN}') || ` +
        "(int(self.substring(self.lastIndexOf(':') + 1)) >= 1 && int(self.substring(self.lastIndexOf(':') + 1)) <= 65535)",
      message: `${field} entries must be host:port with a port from 1 to 65535`,
    },
    (v) => {
      const p = portOf(v);
      return p >= 1 && p <= 65535;
    },
  );
}

/** Network disposition of a world (`prefix` is e.g. `spec.network`). */
export function networkSchema(prefix: string, description: string) {
  let s = z
    .object({
      policy: z
        .enum(NETWORK_POLICIES)
        .default('None')
        .describe(
          'None: an empty network namespace, no egress at all. Allowlist: an empty network namespace whose only exit ' +
            'is the node-agent proxy, which connects only to the allow entries and records every refusal. Shared: the ' +
            'host network, no containment (use only for trusted workloads).',
        ),
      allow: listType(
        z.array(hostPort(`${prefix}.allow`, 'A destination the proxy may connect to, as host:port (e.g. api.example.com:443).')).max(64),
        'set',
      )
        .refine((v) => uniqueBy(v, (x) => x), { message: `${prefix}.allow entries must be unique` })
        .optional()
        .describe('Destinations reachable through the proxy, as host:port. Only allowed when policy is Allowlist.'),
    })
    .describe(description);
  s = celChecked(
    s,
    {
      rule: "(has(self.policy) && self.policy == 'Allowlist') || !has(self.allow) || size(self.allow) == 0",
      message: `${prefix}.allow is only allowed when ${prefix}.policy is Allowlist`,
      fieldPath: '.allow',
      reason: 'FieldValueForbidden',
    },
    (v) => v.policy === 'Allowlist' || !v.allow || v.allow.length === 0,
  );
  s = celChecked(
    s,
    {
      rule: "!has(self.policy) || self.policy != 'Allowlist' || (has(self.allow) && size(self.allow) > 0)",
      message: `${prefix}.policy Allowlist requires at least one ${prefix}.allow entry`,
      fieldPath: '.allow',
      reason: 'FieldValueRequired',
    },
    (v) => v.policy !== 'Allowlist' || (v.allow?.length ?? 0) > 0,
  );
  return s;
}

// ---- Isolation ------------------------------------------------------------------------------------------------

/** One level of the ordered isolation vocabulary. */
export function isolationLevel(description: string) {
  return z.enum(ISOLATION_LEVELS).describe(description);
}

/** A set of isolation controls (unique, any order; worldline canonicalizes the order). */
export function isolationControls(field: string, description: string) {
  return listType(
    z.array(z.enum(ISOLATION_CONTROLS).describe('One control of the containment vocabulary.')).max(ISOLATION_CONTROLS.length),
    'set',
  )
    .refine((v) => uniqueBy(v, (x) => x), { message: `${field} must not repeat a control` })
    .describe(description);
}
