// A job that fails and restarts as torchrun runs it (RunConfig::failure): every worker stops,
// every worker starts again from the newest checkpoint, and the job ends as an uninterrupted
// run would (bit for bit on the same layout); elastic jobs shrink, fixed ones fail; checkpoints
// on a lost node's local disk are lost with it; max_restarts bounds the restarts.
#include <QtTest>

#include "engine_test_support.h"
#include "pd/error.h"
#include "pd/run.h"

using namespace pd;
using namespace pd::test;

namespace {

RunConfig job(int devices, int nodes) {
    RunConfig c = small_config(devices == 1 ? StrategyKind::single : StrategyKind::dp, devices);
    c.cluster.nodes = nodes;
    c.batch = 24;
    c.steps = 8;
    c.optimizer = OptimizerKind::adamw;
    c.checkpoint_every = 2;
    return c;
}

RunConfig failing(RunConfig c, int node, int step, int max_restarts) {
    c.failure.node = node;
    c.failure.step = step;
    c.max_restarts = max_restarts;
    return c;
}

}  // namespace

class TestRestart : public QObject {
    Q_OBJECT

  private slots:
    void a_restart_resumes_from_the_newest_checkpoint() {
        const RunConfig plain = job(4, 2);
        const RunResult whole = run_config(plain);
        const RunResult r = run_config(failing(plain, 1, 5, 3));
        QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
        QCOMPARE(r.trace.restarts.size(), std::size_t{1});
        const auto& restart = r.trace.restarts.front();
        QCOMPARE(restart.resumed_from, 4);
        QCOMPARE(restart.failed_at, 5);
        QCOMPARE(restart.devices_after, 4);
        QVERIFY(restart.why.find("node 1 (devices 2-3) failed") != std::string::npos);
        // Steps 0..5 (5 failed), then 4..7 again from the checkpoint.
        QCOMPARE(r.trace.trained_step, (std::vector<int>{0, 1, 2, 3, 4, 5, 4, 5, 6, 7}));
        QCOMPARE(r.steps_completed, 8);
        // The same layout: the job ends exactly where the uninterrupted run does.
        QCOMPARE(r.final_parameters, whole.final_parameters);
        QCOMPARE(r.trace.steps.back().loss, whole.trace.steps.back().loss);
        // One time axis: the second attempt's work comes after the first's.
        std::int64_t first_end = 0, second_start = INT64_MAX;
        for (const TraceEvent& e : r.trace.events) {
            if (e.step >= 0 && e.step <= 5) first_end = std::max(first_end, e.end_ns);
            if (e.step >= 6) second_start = std::min(second_start, e.start_ns);
        }
        QVERIFY(first_end <= restart.t_ns);
        QVERIFY(second_start >= restart.t_ns);
    }

    void max_restarts_bounds_the_job() {
        const RunResult r = run_config(failing(job(4, 2), 1, 3, 0));
        QCOMPARE(r.status, RunStatus::failed);
        QVERIFY(r.device_failed);
        QVERIFY2(r.error.find("node 1 (devices 2-3) failed") != std::string::npos, r.error.c_str());
        QVERIFY2(r.error.find("max_restarts is 0") != std::string::npos, r.error.c_str());
        QCOMPARE(r.steps_completed, 3);
    }

    void an_elastic_job_continues_on_the_nodes_left() {
        RunConfig c = failing(job(8, 4), 3, 3, 2);
        c.failure.replaced = false;
        c.min_nodes = 2;
        const RunResult r = run_config(c);
        QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
        QCOMPARE(r.trace.restarts.front().devices_after, 6);
        QCOMPARE(r.trace.restarts.front().resumed_from, 2);
        // Resharded from 8 replicas to 6: the sums over the batch reorder, nothing else.
        const RunResult whole = run_config(job(8, 4));
        QVERIFY(relative_error(r.final_parameters, whole.final_parameters) < 1e-5);
        // A fixed-size job (all 4 nodes needed) cannot rendezvous without the node.
        c.min_nodes = 4;
        const RunResult fixed = run_config(c);
        QCOMPARE(fixed.status, RunStatus::failed);
        QVERIFY2(fixed.error.find("rendezvous cannot complete") != std::string::npos,
                 fixed.error.c_str());
    }

    void a_worker_restarted_alone_leaves_its_peers_waiting() {
        RunConfig c = failing(job(4, 4), 3, 3, 3);
        c.failure.worker_only = true;
        c.collective_timeout_s = 0.5;
        const RunResult r = run_config(c);
        QCOMPARE(r.status, RunStatus::failed);
        QVERIFY(r.timed_out);
        QVERIFY(r.trace.restarts.empty());
        QVERIFY2(r.error.find("only its worker restarted") != std::string::npos, r.error.c_str());
        QCOMPARE(r.steps_completed, 3);
    }

    void local_checkpoints_go_with_the_node() {
        RunConfig c = failing(job(1, 1), 0, 5, 1);
        c.checkpoint_local = true;
        const RunResult r = run_config(c);
        QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
        QCOMPARE(r.trace.restarts.front().resumed_from, -1);
        QVERIFY(r.trace.restarts.front().checkpoint.find("local disks") != std::string::npos);
        QCOMPARE(r.trace.trained_step.size(), std::size_t{14});  // 6 lost, then all 8
        QCOMPARE(r.final_parameters, run_config(job(1, 1)).final_parameters);
    }

    void refusals_name_the_setting() {
        RunConfig c = failing(job(4, 2), 2, 3, 1);
        QVERIFY(run_refusal(c).find("node 2 is not one of the 2 nodes") != std::string::npos);
        c = failing(job(4, 2), 1, 8, 1);
        QVERIFY(run_refusal(c).find("past the run's 8 steps") != std::string::npos);
        c = job(4, 2);
        c.max_restarts = 2;
        QVERIFY(run_refusal(c).find("applies to a job with a failure") != std::string::npos);
        c = failing(job(4, 2), 1, 3, 1);
        c.strategy = StrategyKind::pipeline;
        c.layers = 4;
        c.checkpoint_every = 0;
        QVERIFY2(run_refusal(c).find("strategies single, dp and zero1-3") != std::string::npos,
                 run_refusal(c).c_str());
        // Elastic down to a size the batch cannot split over is refused before it runs.
        c = failing(job(8, 4), 3, 3, 1);
        c.failure.replaced = false;
        c.min_nodes = 3;
        c.batch = 32;  // 8 replicas: 4 each; 6 replicas: no
        QVERIFY2(
            run_refusal(c).find("nodes left after the failure cannot run") != std::string::npos,
            run_refusal(c).c_str());
    }
};

QTEST_GUILESS_MAIN(TestRestart)
#include "test_restart.moc"
