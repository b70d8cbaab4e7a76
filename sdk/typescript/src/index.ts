// taskflow from TypeScript: Client (the REST API, typed from its OpenAPI
// document) and Service (an external service over Redis Streams).
export * from './client.js';
export * from './service.js';
export { keys, checkNamespace, type Keys } from './keys.js';
export { VERSION } from './version.js';
