import { ContainerModule } from 'inversify';
import { HttpWebhookSender } from '../webhook/http.webhook-sender.js';
import { TOKENS } from './tokens.js';

/**
 * Binds the HTTP webhook sender. Whether private destinations are allowed comes from the bound CoreConfig
 * (`WEBHOOK_ALLOW_PRIVATE`). One sender per container, so connections are kept alive across deliveries;
 * `unbindAllAsync()` (container shutdown) closes them; the deactivation is async, so the sync `unbindAll()` refuses.
 */
export const webhookModule = new ContainerModule(({ bind }) => {
  bind(TOKENS.webhookSender)
    .toDynamicValue((context) => new HttpWebhookSender({ allowPrivate: context.get(TOKENS.config).webhookAllowPrivate }))
    .inSingletonScope()
    .onDeactivation(async (sender) => {
      if (sender instanceof HttpWebhookSender) await sender.close();
    });
});
