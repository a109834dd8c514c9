// A statement signed by a node, as a status field shows it: the DSSE envelope and its digest in the node's
// evidence store (node-agent/evidence/statement-signer.ts).
import { z } from 'zod';

export function signedStatement(description: string) {
  return z
    .object({
      digest: z.string().max(71).describe('The envelope\'s digest in the node\'s evidence store (sha256:<hex>).'),
      envelope: z.string().max(65536).describe('The DSSE envelope (JSON text): an in-toto statement signed with the node\'s key.'),
    })
    .describe(description);
}
