// One training run's plumbing shared by the samples that feed a session from a plx::Loader:
// the loader's fill callbacks for the images and labels streams, and per-micro-batch loss
// and correct-count outputs ([device_iterations, replicas] scalars) read back after each run.
#pragma once

#include <plexus/plexus.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace samples {

/// Not copyable or movable: the run options point into it.
class TrainRun {
 public:
  /// `loss` and `correct` are scalar device-to-host streams of `session`; the loader feeds
  /// `images` and `labels`. Both must outlive this object.
  TrainRun(const plx::Session& session, const plx::Loader& loader, plx::Stream images, plx::Stream labels,
           plx::Stream loss, plx::Stream correct)
      : shape_(session.host_shape(loss)),
        loss_(static_cast<size_t>(plx::numel(shape_))),
        correct_(loss_.size()),
        feeds_(loader.callbacks(images.id, labels.id)),
        loss_out_(loss, loss_.data(), shape_),
        correct_out_(correct, correct_.data(), shape_),
        outputs_{loss_out_.c(), correct_out_.c()} {
    plx_run_options_init(&options_);
    options_.callbacks = feeds_.data();
    options_.num_callbacks = feeds_.size();
    options_.outputs = outputs_.data();
    options_.num_outputs = outputs_.size();
  }
  TrainRun(const TrainRun&) = delete;
  TrainRun& operator=(const TrainRun&) = delete;

  /// Runs the session once; the loader must have been told which run to serve.
  void run(plx::Session& session) const { plx::check(plx_session_run_with(session.get(), &options_)); }

  /// The last run's loss and correct count of each micro-batch of each replica.
  const std::vector<float>& losses() const { return loss_; }
  const std::vector<int32_t>& corrects() const { return correct_; }

 private:
  plx::Shape shape_;
  std::vector<float> loss_;
  std::vector<int32_t> correct_;
  std::array<plx_stream_callback, 2> feeds_;
  plx::HostArray loss_out_, correct_out_;
  std::array<plx_host_array, 2> outputs_;
  plx_run_options options_{};
};

}  // namespace samples
