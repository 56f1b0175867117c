# dd_race with a wider window on purpose: cowsim delays every read by 20 ms, so a
# job without its step-aside (a scratch build whose PrefillJob::others_arrived()
# only answers "ending") loses the mid-disk round's data; this build must not.
PREWARMD_RACE_STRESS=1 PREWARMD_RACE_ROUNDS=${PREWARMD_RACE_ROUNDS:-2} \
    exec bash "$(dirname "$0")/dd_race.sh"
