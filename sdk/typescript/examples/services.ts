// The spec-003 example services on the TypeScript SDK: report-service
// (report.generate) and export-service (data.export), the same names and
// types as the Go ones (`taskflow dev --services report,export`), so
// either can serve a deployment.
//
//   REDIS_URL=redis://127.0.0.1:6379 TASKFLOW_NAMESPACE=taskflow node build/examples/services.js
import { Service } from '@taskflow/sdk';

import { exporter } from './export.js';
import { report } from './report.js';

const services = [
  new Service({ name: 'report-service' }).task('report.generate', report),
  new Service({ name: 'export-service' }).task('data.export', exporter),
];
process.on('SIGTERM', () => services.forEach((s) => s.stop()));
process.on('SIGINT', () => services.forEach((s) => s.stop()));
await Promise.all(services.map((s) => s.run({ onReady: () => console.log(`ready ${s.name} ${s.consumer}`) })));
