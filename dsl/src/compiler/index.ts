// The compiler's API (the dslc command is cli.ts).
export { analyze, formatDiagnostic, RUNTIME_MODULE, type Diagnostic } from "./analyze.js";
export { canonicalJSON, CompileError, compileFile, compileSource, TOOL_VERSION, type CompiledPlan, type CompileOptions } from "./compile.js";
export { main } from "./cli.js";
