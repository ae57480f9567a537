import { test } from 'vitest';
import { MemoryBlob } from '../../adapters/blob/memory/memory.blob.js';
import { defineBlobContract } from '../ports/blob.contract.js';

defineBlobContract({ test, make: () => new MemoryBlob(), boundedMemory: false });
