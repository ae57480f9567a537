import { ContainerModule } from 'inversify';
import type { Logger } from 'pino';
import { HttpWebhookSender } from '../webhook/http.webhook-sender.js';
import { TOKENS } from './tokens.js';

/**
 * Binds the HTTP webhook sender. Whether private destinations are allowed comes from the bound CoreConfig
 * (`WEBHOOK_ALLOW_PRIVATE`). One sender per container, so connections are kept alive across deliveries;
 * `unbindAllAsync()` (container shutdown) closes them; the deactivation is async, so the sync `unbindAll()` refuses.
 * The logger, when given, gets the network details of failed attempts, which customers are never shown.
 */
export const webhookModule = (options: { logger?: Logger } = {}) =>
  new ContainerModule(({ bind }) => {
    bind(TOKENS.webhookSender)
      .toDynamicValue(
        (context) =>
          new HttpWebhookSender({ allowPrivate: context.get(TOKENS.config).webhookAllowPrivate, ...(options.logger ? { logger: options.logger } : {}) }),
      )
      .inSingletonScope()
      .onDeactivation(async (sender) => {
        if (sender instanceof HttpWebhookSender) await sender.close();
      });
  });
