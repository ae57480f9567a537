// The API's phone and email rules (a request validates with them too).
export { EMAIL_INVALID, normaliseEmail, normalisePhone, normalisePhoneSlowly, PHONE_INVALID } from '../../contract/fields/contacts.js';
