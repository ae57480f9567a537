import fc from 'fast-check';
import { expect } from 'vitest';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import { AccountApi, csvOf, personRow } from '../support/api.js';
import type { HostDriver } from '../support/driver.js';

const UPLOAD_WINDOW_MS = 10 * 60_000;

type Status = 'waiting' | 'processing' | 'completed' | 'failed' | 'expired';

/** What the product description says should happen (States and transitions). */
interface Model {
  status: Status;
  elapsedMs: number;
  webhooks: string[];
}

interface Real {
  host: HostDriver;
  api: AccountApi;
  requestId: string;
  uploadUrl: string;
}

/** Lazy and scheduled expiry agree: once the window has passed, a waiting request reads as expired. */
function effective(model: Model): Status {
  return model.status === 'waiting' && model.elapsedMs >= UPLOAD_WINDOW_MS ? 'expired' : model.status;
}

class UploadCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly valid: boolean) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const response = await real.api.upload(real.uploadUrl, this.valid ? csvOf([personRow(1), personRow(2)]) : 'not,a,patient,file\n1,2,3,4\n');
    const status = effective(model);
    if (model.elapsedMs >= UPLOAD_WINDOW_MS) {
      // The URL itself has expired, whatever became of the request.
      if (status === 'expired') model.status = 'expired';
      expect(response.status).toBe(410);
    } else if (status !== 'waiting') {
      expect(response.status).toBe(409);
    } else if (this.valid) {
      expect(response.status, response.text).toBe(200);
      model.status = 'processing';
      model.webhooks.push('processing');
    } else {
      expect(response.status).toBe(400);
      model.status = 'failed';
      model.webhooks.push('failed');
    }
  }
  toString = () => `upload(${this.valid ? 'valid' : 'invalid'})`;
}

class SettleCommand implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(model: Model, real: Real) {
    await real.host.settle();
    if (model.status === 'processing') {
      model.status = 'completed';
      model.webhooks.push('completed');
    }
    if (effective(model) === 'expired') model.status = 'expired';
  }
  toString = () => 'settle';
}

class AdvanceCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(model: Model, real: Real) {
    real.host.clock.advance(this.ms);
    model.elapsedMs += this.ms;
  }
  toString = () => `advance(${this.ms})`;
}

class ReadStatusCommand implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(model: Model, real: Real) {
    const response = await real.api.bulkStatus(real.requestId);
    expect(response.status).toBe(200);
    const expected = effective(model);
    model.status = expected;
    expect(response.body.status).toBe(expected);
  }
  toString = () => 'readStatus';
}

export function defineBulkStateMachineGroup({ describe, test, makeHost, numRuns = 15 }: HostSpecOptions): void {
  describe('bulk request state machine', () => {
    test('property: random command sequences reach only allowed states and emit exactly the listed webhooks', async () => {
      const commands = fc.commands(
        [
          fc.boolean().map((valid) => new UploadCommand(valid)),
          fc.constant(new SettleCommand()),
          fc.constantFrom(1_000, 4 * 60_000, UPLOAD_WINDOW_MS).map((ms) => new AdvanceCommand(ms)),
          fc.constant(new ReadStatusCommand()),
        ],
        { maxCommands: 8 },
      );
      await fc.assert(
        fc.asyncProperty(commands, async (sequence) => {
          await withHost(makeHost, async (host) => {
            const api = await AccountApi.create(host);
            await api.createFacility();
            const started = await api.startBulk();
            expect(started.body.status).toBe('waiting');
            const model: Model = { status: 'waiting', elapsedMs: 0, webhooks: [] };
            const real: Real = { host, api, requestId: started.body.requestId, uploadUrl: started.body.uploadUrl };
            await fc.asyncModelRun(() => ({ model, real }), sequence);
            await new SettleCommand().run(model, real);
            await new ReadStatusCommand().run(model, real);
            const emitted = (await api.webhooks()).filter((m) => m.meta.type === 'medical.bulk-patient-create').map((m) => m.bulkPatientCreate.status);
            expect(emitted).toEqual(model.webhooks);
            // At most two messages per request, the second completed or failed.
            expect(emitted.length).toBeLessThanOrEqual(2);
          });
        }),
        { numRuns },
      );
    });
  });
}
