import type { ServiceIdentifier } from 'inversify';
import type { CoreConfig } from '../../core/deps.js';
import type {
  BlobPort,
  CcdaConverterPort,
  ClockPort,
  DataNetworkPort,
  HieNetworkPort,
  IdsPort,
  QueuePort,
  RendererPort,
  SearchIndexPort,
  SecretsPort,
  StoragePort,
  UrlSignerPort,
  WebhookSenderPort,
} from '../../core/ports/index.js';
import type { SearchIndexWithoutStamps } from '../search/stamped.search-index.js';

/** Inversify tokens, typed with their port. They live outside core so the core carries no decorators. */
export const TOKENS = {
  storage: Symbol.for('carebridge.storage') as ServiceIdentifier<StoragePort>,
  blob: Symbol.for('carebridge.blob') as ServiceIdentifier<BlobPort>,
  urlSigner: Symbol.for('carebridge.urlSigner') as ServiceIdentifier<UrlSignerPort>,
  clock: Symbol.for('carebridge.clock') as ServiceIdentifier<ClockPort>,
  ids: Symbol.for('carebridge.ids') as ServiceIdentifier<IdsPort>,
  secrets: Symbol.for('carebridge.secrets') as ServiceIdentifier<SecretsPort>,
  queue: Symbol.for('carebridge.queue') as ServiceIdentifier<QueuePort>,
  webhookSender: Symbol.for('carebridge.webhookSender') as ServiceIdentifier<WebhookSenderPort>,
  hie: Symbol.for('carebridge.hie') as ServiceIdentifier<HieNetworkPort>,
  pharmacy: Symbol.for('carebridge.pharmacy') as ServiceIdentifier<DataNetworkPort>,
  lab: Symbol.for('carebridge.lab') as ServiceIdentifier<DataNetworkPort>,
  ccda: Symbol.for('carebridge.ccda') as ServiceIdentifier<CcdaConverterPort>,
  search: Symbol.for('carebridge.search') as ServiceIdentifier<SearchIndexPort>,
  renderer: Symbol.for('carebridge.renderer') as ServiceIdentifier<RendererPort>,
  config: Symbol.for('carebridge.config') as ServiceIdentifier<CoreConfig>,
} as const;

/** The ports, by name: the one list the container, the core's dependencies and replacement read. */
export type PortName = Exclude<keyof typeof TOKENS, 'config'>;

/** An implementation of every port, by name. */
/** The ports by name as the core uses them. */
export type CorePorts = { [K in PortName]: (typeof TOKENS)[K] extends ServiceIdentifier<infer T> ? T : never };
/** The ports by name as an embedder may supply them: a search index may leave the stamps to the host. */
export type Ports = Omit<CorePorts, 'search'> & { search: SearchIndexWithoutStamps };

export const PORT_NAMES = Object.keys(TOKENS).filter((name): name is PortName => name !== 'config');
