/**
 * What @medplum/ccda 4.5 (after normalise-ccda.ts) extracts from each HL7 example, checked by hand against
 * the XML: e.g. ccd-1's PROBLEMS list pneumonia twice and chest pain, and its encounter adds a pneumonia
 * diagnosis (4 Conditions); its MEDICATIONS are albuterol and atenolol; discharge-summary has an admission and
 * a discharge diagnosis besides its two problems, and one discharge medication (ibuprofen); procedure-note
 * has pre- and postprocedure diagnoses and one anesthesia drug (propofol). care-plan's health concerns link
 * their problems with REFR, which the converter does not follow, so it yields no Condition. Practitioner
 * counts are high because the converter creates one per author/performer occurrence. A Family History
 * Organizer is one FamilyMemberHistory (the repair of the converter's output): the Observations the
 * converter made of it, all about the patient, are gone (6 in ccd-1, 6 in each of the two others).
 */
export const expectedCounts: Record<string, Record<string, number>> = {
  'care-plan.xml': { Composition: 1, Goal: 1, Observation: 2, Organization: 1, Patient: 1, Practitioner: 2, RelatedPerson: 4 },
  'ccd-1.xml': {
    AllergyIntolerance: 2, Composition: 1, Condition: 4, Encounter: 1, FamilyMemberHistory: 1, Immunization: 5, MedicationRequest: 2, Observation: 28,
    Organization: 7, Patient: 1, Practitioner: 36, PractitionerRole: 6, Procedure: 4, RelatedPerson: 2,
  },
  'ccd-2.xml': { AllergyIntolerance: 1, Composition: 1, Observation: 14, Organization: 1, Patient: 1, Practitioner: 12, Procedure: 2, RelatedPerson: 2 },
  'consultation-note.xml': {
    AllergyIntolerance: 2, CarePlan: 2, Composition: 1, Condition: 3, Encounter: 1, Goal: 1, MedicationRequest: 2, Observation: 29,
    Organization: 2, Patient: 1, Practitioner: 33, PractitionerRole: 1, RelatedPerson: 1,
  },
  'discharge-summary.xml': {
    AllergyIntolerance: 3, Composition: 1, Condition: 4, FamilyMemberHistory: 1, Goal: 1, Immunization: 2, MedicationRequest: 1, Observation: 7,
    Organization: 1, Patient: 1, Practitioner: 2, Procedure: 1, RelatedPerson: 1,
  },
  'history-and-physical.xml': {
    AllergyIntolerance: 3, CarePlan: 1, Composition: 1, Condition: 2, Encounter: 1, FamilyMemberHistory: 1, Goal: 1, Immunization: 4, MedicationRequest: 1,
    Observation: 16, Organization: 1, Patient: 1, Practitioner: 4, Procedure: 3, RelatedPerson: 1,
  },
  'procedure-note.xml': {
    Composition: 1, Condition: 2, MedicationRequest: 1, Observation: 5, Organization: 1, Patient: 1, Practitioner: 9, Procedure: 2, RelatedPerson: 1,
  },
  'progress-note.xml': {
    AllergyIntolerance: 2, CarePlan: 2, Composition: 1, Condition: 3, Encounter: 1, Goal: 1, MedicationRequest: 2, Observation: 18,
    Organization: 2, Patient: 1, Practitioner: 26, PractitionerRole: 1, RelatedPerson: 1,
  },
};
