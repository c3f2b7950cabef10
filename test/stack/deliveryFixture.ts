import { QueryTypes } from 'sequelize';
import * as admin from '../../admin/commands';
import { EVENT_TYPES } from '../../domain/events';
import { mintId, mintTraceId } from '../../domain/ids';
import { secretHint, mintSecret } from '../../domain/webhookSignatures';
import { Outbox } from '../../db/outbox';
import { closeDb, db } from '../../db/sequelize';
import { transaction } from '../../db/sql';
import { claimDelivery } from '../../db/webhookDeliveries';
import { insertEndpoint } from '../../db/webhookEndpoints';
import { closeRedis } from '../../infra/redis';

/**
 * Writes a partner's data into the database DATABASE_URL names, as a deployment of its own would
 * have it (test/deliveryNamespaces.test.ts runs it compiled, in a child process, against a database
 * no other test uses):
 *   `node dist/test/stack/deliveryFixture.js partner <receiver url>` → {partner, merchant} as JSON
 *   `node dist/test/stack/deliveryFixture.js emit <partner> <merchant JSON> <n>` → n events in the outbox
 *   `node dist/test/stack/deliveryFixture.js claim <delivery> <generation> <namespace>` → whether the claim was had
 */
async function main([command, ...args]: string[]): Promise<unknown> {
  if (command === 'partner') {
    const partner = await admin.createPartner({ name: 'reseller' });
    const key = await admin.createPartnerKey({ partner: partner.id, scopes: 'webhooks:read,webhooks:write' });
    const ws = await admin.createWorkspace({ name: 'merchant', credits: 1000, partner: partner.id, tenantRef: 'm-1' });
    const [ids] = await db().query<{ partnerId: number; keyId: number; workspaceId: number }>(
      `SELECT (SELECT id FROM partners WHERE public_id = :partner) AS "partnerId", (SELECT id FROM api_keys WHERE public_id = :key) AS "keyId",
              (SELECT id FROM workspaces WHERE public_id = :ws) AS "workspaceId"`,
      { replacements: { partner: partner.id, key: key.id, ws: ws.id }, type: QueryTypes.SELECT },
    );
    const secret = mintSecret();
    await insertEndpoint(
      { publicId: mintId('webhookEndpoint'), partnerId: ids.partnerId, url: args[0], description: '', apiVersion: '2026-06-01', enabledEvents: ['*'], permittedEvents: EVENT_TYPES, createdByKey: ids.keyId, secret, secretHint: secretHint(secret) },
      10,
    );
    return { partner: partner.id, merchant: { id: ids.workspaceId, publicId: ws.id, tenantRef: ws.tenant_ref } };
  }
  if (command === 'emit') {
    const [partner, merchant, n] = [args[0], JSON.parse(args[1]), Number(args[2])];
    const outbox = new Outbox({ ...merchant, partnerPublicId: partner }, { requestId: mintId('request'), traceId: mintTraceId() });
    for (let i = 0; i < n; i++) outbox.add('agent.run.completed', { id: mintId('run'), status: 'completed' });
    await transaction((tx) => outbox.write(tx));
    return { emitted: n };
  }
  if (command === 'claim') {
    const [publicId, generation, namespace] = args;
    return claimDelivery({ publicId, generation: Number(generation), workspacePublicId: '', attempts: 0 }, namespace);
  }
  throw new Error(`unknown command ${command}`);
}

main(process.argv.slice(2))
  .then(async (out) => {
    process.stdout.write(JSON.stringify(out));
    await Promise.allSettled([closeDb(), closeRedis()]);
  })
  .catch((err) => {
    process.stderr.write(String(err?.stack ?? err));
    process.exit(1);
  });
