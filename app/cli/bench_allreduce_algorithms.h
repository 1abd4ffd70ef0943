// `paralleldeck-bench allreduce --algorithms`: every all-reduce algorithm on named topologies
// and sizes, on the device clock (its transfers timed by the cluster model, its copies and adds
// by this CPU), beside the alpha-beta model's prediction; and the ring/tree crossover measured
// and predicted.
#pragma once

namespace pd::cli {

int bench_allreduce_algorithms(int iters);

}  // namespace pd::cli
