import type { DataNetworkAnswer, DataNetworkPort, NetworkDirectoryEntry } from '../../core/ports/data-network.port.js';
import type { FhirResource } from '../../core/ports/ccda.port.js';
import type { HiePatientQuery } from '../../core/ports/hie.port.js';
import { SANDBOX_NETWORK, sandboxHash, seededRandom } from './sandbox-directory.js';

const LOINC = 'http://loinc.org';
const UCUM = 'http://unitsofmeasure.org';
const INTERPRETATION = 'http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation';
/** HL7 v2 table 0074 (diagnostic service section): laboratory. */
const LAB_SECTION = 'LAB';

interface Analyte {
  loinc: string;
  display: string;
  unit: string;
  low?: number;
  high?: number;
  /** Values are drawn in [min, max]; outside the reference range now and then, as in life. */
  min: number;
  max: number;
  decimals: number;
}

interface Panel {
  loinc: string;
  display: string;
  analytes: readonly Analyte[];
}

/** Common outpatient panels, coded with LOINC, units in UCUM, with adult reference ranges. */
const PANELS: readonly Panel[] = [
  {
    loinc: '51990-0',
    display: 'Basic metabolic panel - Blood',
    analytes: [
      { loinc: '2345-7', display: 'Glucose [Mass/volume] in Serum or Plasma', unit: 'mg/dL', low: 70, high: 99, min: 65, max: 160, decimals: 0 },
      { loinc: '3094-0', display: 'Urea nitrogen [Mass/volume] in Serum or Plasma', unit: 'mg/dL', low: 7, high: 20, min: 6, max: 26, decimals: 0 },
      { loinc: '2160-0', display: 'Creatinine [Mass/volume] in Serum or Plasma', unit: 'mg/dL', low: 0.6, high: 1.3, min: 0.5, max: 1.6, decimals: 2 },
      { loinc: '2951-2', display: 'Sodium [Moles/volume] in Serum or Plasma', unit: 'mmol/L', low: 135, high: 145, min: 132, max: 147, decimals: 0 },
      { loinc: '2823-3', display: 'Potassium [Moles/volume] in Serum or Plasma', unit: 'mmol/L', low: 3.5, high: 5.1, min: 3.3, max: 5.4, decimals: 1 },
      { loinc: '2075-0', display: 'Chloride [Moles/volume] in Serum or Plasma', unit: 'mmol/L', low: 98, high: 107, min: 96, max: 109, decimals: 0 },
      { loinc: '2028-9', display: 'Carbon dioxide, total [Moles/volume] in Serum or Plasma', unit: 'mmol/L', low: 22, high: 29, min: 20, max: 31, decimals: 0 },
      { loinc: '17861-6', display: 'Calcium [Mass/volume] in Serum or Plasma', unit: 'mg/dL', low: 8.6, high: 10.3, min: 8.4, max: 10.6, decimals: 1 },
    ],
  },
  {
    loinc: '24331-1',
    display: 'Lipid panel - Serum or Plasma',
    analytes: [
      { loinc: '2093-3', display: 'Cholesterol [Mass/volume] in Serum or Plasma', unit: 'mg/dL', high: 200, min: 140, max: 260, decimals: 0 },
      { loinc: '2571-8', display: 'Triglyceride [Mass/volume] in Serum or Plasma', unit: 'mg/dL', high: 150, min: 60, max: 240, decimals: 0 },
      { loinc: '2085-9', display: 'Cholesterol in HDL [Mass/volume] in Serum or Plasma', unit: 'mg/dL', low: 40, min: 32, max: 80, decimals: 0 },
      { loinc: '13457-7', display: 'Cholesterol in LDL [Mass/volume] in Serum or Plasma by calculation', unit: 'mg/dL', high: 100, min: 60, max: 180, decimals: 0 },
    ],
  },
  {
    loinc: '4548-4',
    display: 'Hemoglobin A1c/Hemoglobin.total in Blood',
    analytes: [{ loinc: '4548-4', display: 'Hemoglobin A1c/Hemoglobin.total in Blood', unit: '%', low: 4, high: 5.6, min: 4.8, max: 9.5, decimals: 1 }],
  },
  {
    loinc: '58410-2',
    display: 'CBC panel - Blood by Automated count',
    analytes: [
      { loinc: '6690-2', display: 'Leukocytes [#/volume] in Blood by Automated count', unit: '10*3/uL', low: 4.5, high: 11, min: 3.8, max: 12.5, decimals: 1 },
      { loinc: '718-7', display: 'Hemoglobin [Mass/volume] in Blood', unit: 'g/dL', low: 12, high: 17.5, min: 11.2, max: 17.8, decimals: 1 },
      { loinc: '4544-3', display: 'Hematocrit [Volume Fraction] of Blood by Automated count', unit: '%', low: 36, high: 50, min: 34, max: 52, decimals: 1 },
      { loinc: '777-3', display: 'Platelets [#/volume] in Blood by Automated count', unit: '10*3/uL', low: 150, high: 400, min: 140, max: 420, decimals: 0 },
    ],
  },
  {
    loinc: '3016-3',
    display: 'Thyrotropin [Units/volume] in Serum or Plasma',
    analytes: [{ loinc: '3016-3', display: 'Thyrotropin [Units/volume] in Serum or Plasma', unit: 'm[IU]/L', low: 0.4, high: 4, min: 0.3, max: 5.2, decimals: 2 }],
  },
];

const LABORATORY = { name: 'Sandbox Reference Laboratory', npi: '1144221847', addressLine: '1200 Research Blvd', city: 'Rockville', state: 'MD', zipCode: '20850' };
const LABORATORY_OID = '2.16.840.1.113883.3.9621.5000';
const LAB_ORG_ID = 'lab-org-1';
/** About one patient in this many has no results at the laboratory. */
const NONE_ONE_IN = 5;
const LAST_DRAW = Date.UTC(2026, 9, 1, 14, 30);
const DAY_MS = 86_400_000;

function round(value: number, decimals: number): number {
  const factor = 10 ** decimals;
  return Math.round(value * factor) / factor;
}

function interpretationOf(value: number, analyte: Analyte): { code: string; display: string } {
  if (analyte.low !== undefined && value < analyte.low) return { code: 'L', display: 'Low' };
  if (analyte.high !== undefined && value > analyte.high) return { code: 'H', display: 'High' };
  return { code: 'N', display: 'Normal' };
}

function quantity(value: number, unit: string) {
  return { value, unit, system: UCUM, code: unit };
}

/**
 * The laboratory network of the sandbox: a patient's results (1 to 3 panels, drawn once or twice each) drawn
 * from a hash of the patientId alone, the same on every run, host and database. Each draw is a
 * DiagnosticReport (LOINC panel code, category LAB) whose `result` lists its Observations (LOINC analyte
 * codes, UCUM quantities, reference ranges, an interpretation).
 */
export class SandboxLabNetwork implements DataNetworkPort {
  readonly kind = 'lab' as const;
  readonly name = 'Sandbox Laboratory Network';

  async fetchRecords(query: HiePatientQuery): Promise<DataNetworkAnswer> {
    const random = seededRandom(`lab:${query.patientId}`);
    if (Math.floor(random() * NONE_ONE_IN) === 0) return { resources: [], organizations: [] };
    const key = sandboxHash(`lab:${query.patientId}`).slice(0, 16);
    const subject = { reference: `Patient/${query.patientId}` };
    const performer = [{ reference: `Organization/${LAB_ORG_ID}`, display: LABORATORY.name }];
    const resources: FhirResource[] = [
      {
        resourceType: 'Organization',
        id: LAB_ORG_ID,
        identifier: [{ system: 'http://hl7.org/fhir/sid/us-npi', value: LABORATORY.npi }],
        type: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/organization-type', code: 'prov', display: 'Healthcare Provider' }], text: 'Laboratory' }],
        name: LABORATORY.name,
        address: [{ line: [LABORATORY.addressLine], city: LABORATORY.city, state: LABORATORY.state, postalCode: LABORATORY.zipCode, country: 'US' }],
      },
    ];
    const panelCount = 1 + Math.floor(random() * 3);
    const panels = [...PANELS].map((panel) => ({ panel, rank: random() })).sort((a, b) => a.rank - b.rank).slice(0, panelCount).map(({ panel }) => panel);
    for (const panel of panels) {
      const draws = 1 + Math.floor(random() * 2);
      for (let draw = 0; draw < draws; draw++) {
        const drawn = LAST_DRAW - Math.floor(random() * 90) * DAY_MS - draw * 180 * DAY_MS;
        const effective = new Date(drawn).toISOString();
        const issued = new Date(drawn + DAY_MS / 2).toISOString();
        const reportId = `labrpt-${key}-${panel.loinc}-${draw + 1}`;
        const results: { reference: string; display: string }[] = [];
        panel.analytes.forEach((analyte, index) => {
          const value = round(analyte.min + random() * (analyte.max - analyte.min), analyte.decimals);
          const interpretation = interpretationOf(value, analyte);
          const id = `labobs-${key}-${panel.loinc}-${draw + 1}-${index + 1}`;
          results.push({ reference: `Observation/${id}`, display: analyte.display });
          const range: Record<string, unknown> = {};
          if (analyte.low !== undefined) range.low = quantity(analyte.low, analyte.unit);
          if (analyte.high !== undefined) range.high = quantity(analyte.high, analyte.unit);
          resources.push({
            resourceType: 'Observation',
            id,
            status: 'final',
            category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'laboratory', display: 'Laboratory' }] }],
            code: { coding: [{ system: LOINC, code: analyte.loinc, display: analyte.display }], text: analyte.display },
            subject,
            effectiveDateTime: effective,
            issued,
            performer,
            valueQuantity: quantity(value, analyte.unit),
            interpretation: [{ coding: [{ system: INTERPRETATION, code: interpretation.code, display: interpretation.display }] }],
            referenceRange: [range],
          });
        });
        resources.push({
          resourceType: 'DiagnosticReport',
          id: reportId,
          status: 'final',
          category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0074', code: LAB_SECTION, display: 'Laboratory' }] }],
          code: { coding: [{ system: LOINC, code: panel.loinc, display: panel.display }], text: panel.display },
          subject,
          effectiveDateTime: effective,
          issued,
          performer,
          result: results,
        });
      }
    }
    return { resources, organizations: [{ name: LABORATORY.name, identifierValues: [LABORATORY.npi] }] };
  }

  async directory(): Promise<NetworkDirectoryEntry[]> {
    return [
      {
        name: LABORATORY.name,
        oid: LABORATORY_OID,
        npi: LABORATORY.npi,
        addressLine: LABORATORY.addressLine,
        city: LABORATORY.city,
        state: LABORATORY.state,
        zipCode: LABORATORY.zipCode,
        rootOrganization: this.name,
        network: SANDBOX_NETWORK,
        supportsMessaging: false,
        active: true,
      },
    ];
  }
}
