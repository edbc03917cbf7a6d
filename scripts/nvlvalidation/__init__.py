"""scripts/validation-report's parts: common (paths, running a tool, the
error measures, tables), tools (the bench tools and the nvlemu runs of each
measured or published source), nccl (the published nccl-tests), hgx (the
lent HGX H100 x4), families (the summary rows and families.json) and
markdown (docs/validation.md)."""
