import { describe, expect, test } from 'vitest';
import { CoreError } from '../errors.js';
import { deliveryFor, eventTypesTake, FILTERABLE_EVENT_TYPES, messageIdOf, validateEventTypes } from './endpoints.js';

describe('endpoint event type filters', () => {
  test('an exact type takes itself only; `prefix.*` takes the types under the prefix; empty takes every type', () => {
    expect(eventTypesTake(['medical.document-conversion'], 'medical.document-conversion')).toBe(true);
    expect(eventTypesTake(['medical.document-conversion'], 'medical.document-download')).toBe(false);
    expect(eventTypesTake(['network-query.*'], 'network-query.lab')).toBe(true);
    expect(eventTypesTake(['network-query.*'], 'medical.bulk-patient-create')).toBe(false);
    // The dot is part of the prefix: `medical.*` does not take a type merely starting with "medical".
    expect(eventTypesTake(['medical.*'], 'medicalx.thing')).toBe(false);
    for (const type of FILTERABLE_EVENT_TYPES) expect(eventTypesTake([], type)).toBe(true);
  });

  test('a filter entry that takes no type is WEBHOOK_EVENT_TYPE_UNKNOWN naming it; duplicates are dropped', () => {
    expect(validateEventTypes(['network-query.*', 'medical.consolidated-data', 'network-query.*'])).toEqual(['network-query.*', 'medical.consolidated-data']);
    for (const bad of [['medical.document-conversoin'], ['ping'], ['*'], ['nothing.*'], ['network-query']]) {
      let caught: unknown;
      try {
        validateEventTypes(bad);
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(CoreError);
      expect((caught as CoreError).code).toBe('WEBHOOK_EVENT_TYPE_UNKNOWN');
      expect((caught as CoreError).message).toContain(JSON.stringify(bad[0]));
    }
  });

  test('a delivery to an endpoint has its own id and stream, and the message id of the message', () => {
    const message = {
      id: 'm1',
      accountId: 'a',
      type: 'medical.bulk-patient-create' as const,
      body: '{}',
      streamKey: 'bulk:r1',
      status: 'pending' as const,
      attempts: 0,
      nextAttemptAt: '2024-01-01T00:00:00.000Z',
      createdAt: '2024-01-01T00:00:00.000Z',
    };
    const delivery = deliveryFor(message, 'e1');
    expect(delivery).toMatchObject({ id: 'm1:e1', messageId: 'm1', endpointId: 'e1', streamKey: 'bulk:r1@e1', body: '{}' });
    expect(messageIdOf(delivery)).toBe('m1');
    expect(messageIdOf(message)).toBe('m1');
    expect(deliveryFor(message, 'e2').streamKey).not.toBe(delivery.streamKey);
  });
});
