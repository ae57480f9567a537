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
} from './ports/index.js';

export interface CoreConfig {
  /** Base of every URL handed out (upload, result, download), without trailing slash. */
  publicUrl: string;
  /** Whether webhook URLs on loopback/private networks are accepted (development and tests). */
  webhookAllowPrivate: boolean;
}

/** Everything a use case may reach. Hosts build it; use cases take what they need from it. */
export interface CoreDeps {
  storage: StoragePort;
  blob: BlobPort;
  urlSigner: UrlSignerPort;
  clock: ClockPort;
  ids: IdsPort;
  secrets: SecretsPort;
  queue: QueuePort;
  webhookSender: WebhookSenderPort;
  hie: HieNetworkPort;
  /** The pharmacy network of network queries. */
  pharmacy: DataNetworkPort;
  /** The laboratory network of network queries. */
  lab: DataNetworkPort;
  ccda: CcdaConverterPort;
  search: SearchIndexPort;
  renderer: RendererPort;
  config: CoreConfig;
}
