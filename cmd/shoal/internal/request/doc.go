// Package request is the one reading of a job request shared by Shoal's
// two submitting front-ends: the Slurm ones (sbatch, srun, salloc in
// cmd/shoal/internal/slurmcli, through FromOptions and Batch) and the
// native shoal submit (cmd/shoal). Both turn the same words (--nodes
// MIN-MAX, --gpus, --chdir, --export, --signal, -w/-x files) into the same
// api.SubmitRequest, with the same errors.
//
// It reads the local environment the request carries (the working
// directory, the exported variables, the host name, -w/-x files) and
// prints the parser's warnings; it never talks to an agent.
package request
