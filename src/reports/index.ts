/** Reports of what requests were charged: one request explained, and usage exports (JSON, CSV). */
export { picoUsdString, renderGeneration } from './generation.js';
export { contentTypeOf, fileNameOf, usageExport, type ExportSource } from './usage-export.js';
export { FORMATS, GROUPINGS, parseUsageQuery, type UsageFormat, type UsageQuery } from './usage-query.js';
export { explainCharge, exportUsage, keyUsageOf, type ReportScope, type ReportStores } from './lookups.js';
export { auditPage, parseAuditQuery, renderAuditEntry, type AuditStores } from './audit.js';
