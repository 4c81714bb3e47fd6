/**
 * A webhook receiver for tollgate in plain Node (no framework). Run it with
 *   WEBHOOK_SECRET=<the secret you registered> npx tsx examples/webhook-receiver.ts
 * (inside this repository after `npm run build`, or anywhere `tollgate` is installed), then register
 * http://<this host>:3000/webhooks with POST /v1/webhooks.
 */
import { createServer } from 'node:http';
import { isEventType, verifyWebhook } from 'tollgate/webhooks';

const secret = process.env.WEBHOOK_SECRET;
if (!secret) throw new Error('Set WEBHOOK_SECRET to the secret of your webhook');
const seen = new Set<string>(); // use a database in production: deliveries are at-least-once

const server = createServer((request, response) => {
  if (request.method !== 'POST' || request.url !== '/webhooks') {
    response.writeHead(404).end();
    return;
  }
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    // Verify the exact bytes received: re-serialised JSON would not match the signature.
    const result = verifyWebhook(Buffer.concat(chunks), request.headers, secret, { maxAgeSeconds: 300 });
    if (!result.ok) {
      // 400 is not retried by tollgate: the delivery goes to its dead letters.
      response.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: result.reason }));
      return;
    }
    const { event } = result;
    if (seen.has(event.id)) {
      response.writeHead(200).end(); // a retry of something already handled
      return;
    }
    seen.add(event.id);
    if (isEventType(event, 'credit.low_balance')) {
      console.log(
        `account ${event.data.account_id} is below ${event.data.threshold} USD: ${event.data.balance.credits} left`,
      );
    } else if (isEventType(event, 'llm.completion')) {
      console.log(
        `${event.data.model} answered request ${event.data.requestId} (${event.data.tokens?.total ?? '?'} tokens)`,
      );
    } else if (isEventType(event, 'llm.error')) {
      console.log(`request ${event.data.requestId} failed: ${event.data.error.code} ${event.data.error.message}`);
    } else {
      console.log(`${event.event} ${event.id}`);
    }
    // Answer quickly (within the webhook's timeout); do slow work after responding.
    response.writeHead(204).end();
  });
});

server.listen(Number(process.env.PORT ?? 3000), () => console.log('listening for tollgate webhooks on /webhooks'));
