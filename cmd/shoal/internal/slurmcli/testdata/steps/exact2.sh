#!/bin/bash
#SBATCH -N1 --gpus-per-node=4 -n4 --mem=4000
env | grep -E '^SLURM_(GPUS|MEM|CPUS|NTASKS|TRES)' 
unset SLURM_GPUS_PER_NODE
for i in 0 1 2 3 4 5 6 7; do srun -n1 --gpus=1 --mem=100 --exact bash -c "echo task $i start \$(date +%s) CVD=\$CUDA_VISIBLE_DEVICES SG=\$SLURM_STEP_GPUS GDO=\$GPU_DEVICE_ORDINAL cpus=\$(grep Cpus_allowed_list /proc/self/status|cut -f2); sleep 2; echo task $i end" & done; wait
echo ---noexact
for i in 0 1 2; do srun -n1 --gpus=1 --mem=100 bash -c "echo ne $i start \$(date +%s) CVD=\$CUDA_VISIBLE_DEVICES; sleep 2" & done; wait
echo ---nogpus
srun -n1 --exact --mem=100 --gpus=1 sleep 3 &
sleep 1
srun -n1 --exact --mem=100 bash -c 'echo nog CVD=$CUDA_VISIBLE_DEVICES'
wait
echo ---immediate
srun -n1 --exact --mem=100 --gpus=4 sleep 3 &
sleep 1
srun -n1 --exact --mem=100 --gpus=1 -I echo imm; echo rc=$?
wait
echo ---toomany
srun -n1 --mem=100 --gpus=5 echo hi; echo rc=$?
srun -n8 --mem=100 echo hi; echo rc=$?
