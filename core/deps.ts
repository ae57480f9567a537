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
import type { NotedPauses } from './bulk/pause.js';
import type { PatientSnapshots } from './documents/patient-snapshots.js';
import type { RenderSlots } from './documents/render-slots.js';

export interface CoreConfig {
  /** Base of every URL handed out (upload, result, download), without trailing slash. */
  publicUrl: string;
  /** Whether webhook URLs on loopback/private networks are accepted (development and tests). */
  webhookAllowPrivate: boolean;
  /**
   * Largest C-CDA document converted, bytes (default DEFAULT_MAX_CONVERSION_BYTES). A larger one is stored
   * and listed, and its conversion fails with the reason: converting takes about 16 times a document's size
   * in memory, so one size bound keeps every conversion's memory bounded whatever is uploaded.
   */
  maxConversionBytes?: number;
}

/** 32 MB: the largest real-world C-CDA documents are a few MB; converting 32 MB takes ~0.5 GB. */
export const DEFAULT_MAX_CONVERSION_BYTES = 32 * 1024 * 1024;

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
  /** The cap on renders at once, shared by every account (see RenderSlots); no cap when absent. */
  renders?: RenderSlots;
  config: CoreConfig;
  /**
   * The import pauses this process noted (see core/bulk/pause.ts), so its answers show a pause the storage
   * could not take. One per runtime; without it only the pauses written to the requests show.
   */
  pauses?: NotedPauses;
  /** The resources of the patients searched last (see PatientSnapshots). One per runtime; without it every search reads from storage. */
  snapshots?: PatientSnapshots;
}
