// Bundled in place of @scellis/runtime only when web/runtime was absent at build time: the Studio
// then composes, inspects and runs on the server, and says why nothing runs in the tab.
export function createRuntime() {
  const reason = 'this build of the Studio has no browser runtime (web/runtime was missing when it was built)';
  const refuse = () => Promise.reject(new Error(reason));
  return { backend: 'none', fallbackReason: reason, adapterInfo: null, execute: refuse, prepare: refuse };
}
