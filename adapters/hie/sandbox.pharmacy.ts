import type { DataNetworkAnswer, DataNetworkPort, NetworkDirectoryEntry } from '../../core/ports/data-network.port.js';
import type { FhirResource } from '../../core/ports/ccda.port.js';
import type { HiePatientQuery } from '../../core/ports/hie.port.js';
import { SANDBOX_NETWORK, sandboxHash, seededRandom } from './sandbox-directory.js';

const RXNORM = 'http://www.nlm.nih.gov/research/umls/rxnorm';
const UCUM = 'http://unitsofmeasure.org';

interface Drug {
  rxcui: string;
  display: string;
  sig: string;
  /** Units dispensed per 30 days. */
  perMonth: number;
  unit: string;
}

/**
 * Common outpatient prescriptions (RxNorm clinical drugs). Some are also in the sandbox HIE's documents
 * (atenolol 197380, albuterol 573621, ibuprofen 197806), so a patient's pharmacy history and documents
 * can name the same drug, and the consolidated store then holds it once.
 */
const FORMULARY: readonly Drug[] = [
  { rxcui: '197380', display: 'atenolol 25 MG Oral Tablet', sig: 'Take 1 tablet by mouth once daily', perMonth: 30, unit: 'tablet' },
  { rxcui: '314076', display: 'lisinopril 10 MG Oral Tablet', sig: 'Take 1 tablet by mouth once daily', perMonth: 30, unit: 'tablet' },
  { rxcui: '861007', display: 'metformin hydrochloride 500 MG Oral Tablet', sig: 'Take 1 tablet by mouth twice daily with meals', perMonth: 60, unit: 'tablet' },
  { rxcui: '617310', display: 'atorvastatin 20 MG Oral Tablet', sig: 'Take 1 tablet by mouth at bedtime', perMonth: 30, unit: 'tablet' },
  { rxcui: '310798', display: 'hydrochlorothiazide 25 MG Oral Tablet', sig: 'Take 1 tablet by mouth every morning', perMonth: 30, unit: 'tablet' },
  { rxcui: '197361', display: 'amlodipine 5 MG Oral Tablet', sig: 'Take 1 tablet by mouth once daily', perMonth: 30, unit: 'tablet' },
  { rxcui: '312961', display: 'simvastatin 20 MG Oral Tablet', sig: 'Take 1 tablet by mouth in the evening', perMonth: 30, unit: 'tablet' },
  { rxcui: '310429', display: 'furosemide 20 MG Oral Tablet', sig: 'Take 1 tablet by mouth once daily', perMonth: 30, unit: 'tablet' },
  { rxcui: '573621', display: 'albuterol 0.09 MG/ACTUAT [Proventil]', sig: 'Inhale 2 puffs every 4 to 6 hours as needed for wheezing', perMonth: 1, unit: 'inhaler' },
  { rxcui: '197806', display: 'ibuprofen 600 MG Oral Tablet', sig: 'Take 1 tablet by mouth every 6 hours as needed for pain', perMonth: 40, unit: 'tablet' },
  { rxcui: '308191', display: 'amoxicillin 500 MG Oral Capsule', sig: 'Take 1 capsule by mouth three times daily for 10 days', perMonth: 30, unit: 'capsule' },
];

const PHARMACIES = [
  { name: 'Sandbox Community Pharmacy #1042', npi: '1679576722', city: 'Springfield', state: 'IL', zipCode: '62701', addressLine: '410 E Adams St' },
  { name: 'Sandbox Mail Order Pharmacy', npi: '1245319599', city: 'Columbus', state: 'OH', zipCode: '43215', addressLine: '88 Spring St' },
] as const;

const PHARMACY_OIDS = ['2.16.840.1.113883.3.9621.1042', '2.16.840.1.113883.3.9621.7001'];
/** About one patient in this many has no pharmacy history. */
const NONE_ONE_IN = 6;
/** Fills go back from this day (a fixed day, so the answer never depends on when it is asked). */
const LAST_FILL = Date.UTC(2026, 9, 15);
const DAY_MS = 86_400_000;

function day(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/**
 * The pharmacy network of the sandbox: a patient's prescription history (1 to 4 drugs, 1 to 3 monthly
 * fills each, at one of two pharmacies) drawn from a hash of the patientId alone, so the answer is the
 * same on every run, host and database. Each drug is a MedicationRequest (the prescription) and each fill
 * a MedicationDispense pointing to it, coded with RxNorm, quantities in UCUM.
 */
export class SandboxPharmacyNetwork implements DataNetworkPort {
  readonly kind = 'pharmacy' as const;
  readonly name = 'Sandbox Pharmacy Network';

  async fetchRecords(query: HiePatientQuery): Promise<DataNetworkAnswer> {
    const random = seededRandom(`pharmacy:${query.patientId}`);
    if (Math.floor(random() * NONE_ONE_IN) === 0) return { resources: [], organizations: [] };
    const key = sandboxHash(`pharmacy:${query.patientId}`).slice(0, 16);
    const pharmacyIndex = Math.floor(random() * PHARMACIES.length);
    const pharmacy = PHARMACIES[pharmacyIndex]!;
    const pharmacyId = `rx-org-${pharmacyIndex + 1}`;
    const drugCount = 1 + Math.floor(random() * 4);
    const drugs = [...FORMULARY].map((drug) => ({ drug, rank: random() })).sort((a, b) => a.rank - b.rank).slice(0, drugCount).map(({ drug }) => drug);

    const subject = { reference: `Patient/${query.patientId}` };
    const organization: FhirResource = {
      resourceType: 'Organization',
      id: pharmacyId,
      identifier: [{ system: 'http://hl7.org/fhir/sid/us-npi', value: pharmacy.npi }],
      type: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/organization-type', code: 'prov', display: 'Healthcare Provider' }], text: 'Pharmacy' }],
      name: pharmacy.name,
      address: [{ line: [pharmacy.addressLine], city: pharmacy.city, state: pharmacy.state, postalCode: pharmacy.zipCode, country: 'US' }],
    };
    const resources: FhirResource[] = [organization];
    drugs.forEach((drug, index) => {
      const medication = { coding: [{ system: RXNORM, code: drug.rxcui, display: drug.display }], text: drug.display };
      const fills = 1 + Math.floor(random() * 3);
      const lastFill = LAST_FILL - Math.floor(random() * 120) * DAY_MS;
      const firstFill = lastFill - (fills - 1) * 30 * DAY_MS;
      const requestId = `rx-${key}-${drug.rxcui}`;
      resources.push({
        resourceType: 'MedicationRequest',
        id: requestId,
        status: fills > 1 || index % 2 === 0 ? 'active' : 'completed',
        intent: 'order',
        medicationCodeableConcept: medication,
        subject,
        authoredOn: day(firstFill - 2 * DAY_MS),
        dosageInstruction: [{ text: drug.sig }],
        dispenseRequest: {
          numberOfRepeatsAllowed: 3,
          quantity: { value: drug.perMonth, unit: drug.unit, system: UCUM, code: '{' + drug.unit + '}' },
          expectedSupplyDuration: { value: 30, unit: 'days', system: UCUM, code: 'd' },
        },
      });
      for (let fill = 0; fill < fills; fill++) {
        const handedOver = firstFill + fill * 30 * DAY_MS;
        resources.push({
          resourceType: 'MedicationDispense',
          id: `rxfill-${key}-${drug.rxcui}-${fill + 1}`,
          status: 'completed',
          medicationCodeableConcept: medication,
          subject,
          performer: [{ actor: { reference: `Organization/${pharmacyId}`, display: pharmacy.name } }],
          authorizingPrescription: [{ reference: `MedicationRequest/${requestId}` }],
          type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: fill === 0 ? 'FF' : 'RF', display: fill === 0 ? 'First Fill' : 'Refill' }] },
          quantity: { value: drug.perMonth, unit: drug.unit, system: UCUM, code: '{' + drug.unit + '}' },
          daysSupply: { value: 30, unit: 'days', system: UCUM, code: 'd' },
          whenPrepared: day(handedOver),
          whenHandedOver: day(handedOver),
          dosageInstruction: [{ text: drug.sig }],
        });
      }
    });
    return { resources, organizations: [{ name: pharmacy.name, identifierValues: [pharmacy.npi] }] };
  }

  async directory(): Promise<NetworkDirectoryEntry[]> {
    return PHARMACIES.map((pharmacy, index) => ({
      name: pharmacy.name,
      oid: PHARMACY_OIDS[index]!,
      npi: pharmacy.npi,
      addressLine: pharmacy.addressLine,
      city: pharmacy.city,
      state: pharmacy.state,
      zipCode: pharmacy.zipCode,
      rootOrganization: this.name,
      network: SANDBOX_NETWORK,
      supportsMessaging: false,
      active: true,
    }));
  }
}
