/**
 * What @medplum/ccda 4.5 with the repairs of adapters/ccda extracts from each HL7 example, checked by hand
 * against the XML: e.g. ccd-1's PROBLEMS hold four Problem Observations (one concern holds two) and its
 * encounter adds a pneumonia diagnosis (5 Conditions); its MEDICATIONS are albuterol and atenolol, taken
 * (moodCode EVN), so MedicationStatements; its PROCEDURES are three procedures, a procedure act and an
 * EKG-like Procedure Activity Observation, one of them planned (4 Procedures and a ServiceRequest). discharge-summary has an admission and a
 * discharge diagnosis, its two problems and a functional status problem (5 Conditions), and one discharge
 * medication (ibuprofen, moodCode INT: a MedicationRequest). procedure-note has a preprocedure diagnosis,
 * three findings, a complication and a postprocedure diagnosis of three problems (8 Conditions) and one
 * anesthesia drug given (propofol). care-plan's health concern refers to three problems and a tobacco use
 * observation and its risk concern to one problem (4 Conditions, the tobacco use an Observation); its
 * intervention refers to one procedure act done (elevation of the head of the bed: a Procedure).
 * Planned procedures and tests (moods INT, RQO) are ServiceRequests, never Procedures or Goals.
 * Practitioner counts are high because the converter creates one per author/performer occurrence (a
 * concern split in two carries its author twice). A Family History Organizer is one FamilyMemberHistory:
 * the Observations the converter made of it, all about the patient, are gone.
 */
export const expectedCounts: Record<string, Record<string, number>> = {
  'care-plan.xml': { Composition: 1, Condition: 4, Goal: 1, Observation: 3, Organization: 1, Patient: 1, Practitioner: 2, Procedure: 1, RelatedPerson: 4 },
  'ccd-1.xml': {
    AllergyIntolerance: 2, Composition: 1, Condition: 5, Device: 1, Encounter: 1, FamilyMemberHistory: 1, Immunization: 5, MedicationStatement: 2, Observation: 27,
    Organization: 7, Patient: 1, Practitioner: 38, PractitionerRole: 6, Procedure: 4, RelatedPerson: 2, ServiceRequest: 1,
  },
  'ccd-2.xml': { AllergyIntolerance: 1, Composition: 1, Observation: 13, Organization: 1, Patient: 1, Practitioner: 12, Procedure: 3, RelatedPerson: 2 },
  'consultation-note.xml': {
    AllergyIntolerance: 2, CarePlan: 2, Composition: 1, Condition: 4, Encounter: 1, Goal: 1, MedicationStatement: 2, Observation: 29,
    Organization: 2, Patient: 1, Practitioner: 35, PractitionerRole: 1, RelatedPerson: 1,
  },
  'discharge-summary.xml': {
    AllergyIntolerance: 3, Composition: 1, Condition: 5, FamilyMemberHistory: 1, Immunization: 2, MedicationRequest: 1, Observation: 6,
    Organization: 1, Patient: 1, Practitioner: 2, Procedure: 1, RelatedPerson: 1, ServiceRequest: 1,
  },
  'history-and-physical.xml': {
    AllergyIntolerance: 3, CarePlan: 1, Composition: 1, Condition: 2, Device: 1, Encounter: 1, FamilyMemberHistory: 1, Immunization: 4, MedicationStatement: 1,
    Observation: 15, Organization: 1, Patient: 1, Practitioner: 4, Procedure: 3, RelatedPerson: 1, ServiceRequest: 2,
  },
  'procedure-note.xml': {
    Composition: 1, Condition: 8, MedicationStatement: 1, Observation: 1, Organization: 1, Patient: 1, Practitioner: 17, RelatedPerson: 1, ServiceRequest: 2,
  },
  'progress-note.xml': {
    AllergyIntolerance: 2, CarePlan: 2, Composition: 1, Condition: 3, Encounter: 1, Goal: 1, MedicationStatement: 2, Observation: 18,
    Organization: 2, Patient: 1, Practitioner: 26, PractitionerRole: 1, RelatedPerson: 1,
  },
};
