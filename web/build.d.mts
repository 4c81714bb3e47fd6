export function buildDashboard(options?: { outDir?: string }): Promise<string>;
