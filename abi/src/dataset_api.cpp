// C API: IDX datasets (MNIST, Fashion-MNIST).
#include "abi/src/handles.h"

using namespace plexus;
using abi::guarded;
using abi::require;

extern "C" {

PLX_API plx_status plx_dataset_load_idx(const char* images_path, const char* labels_path,
                                        plx_dataset** out_dataset) {
  return guarded([&] {
    require(images_path, "plx_dataset_load_idx", "images_path");
    require(labels_path, "plx_dataset_load_idx", "labels_path");
    require(out_dataset, "plx_dataset_load_idx", "out_dataset");
    *out_dataset = new plx_dataset{data::read_idx_dataset(images_path, labels_path)};
  });
}

PLX_API void plx_dataset_destroy(plx_dataset* dataset) { delete dataset; }

PLX_API plx_status plx_dataset_get_info(const plx_dataset* dataset, int64_t* out_num_samples,
                                        plx_dtype* out_image_dtype, int64_t* out_image_shape, size_t max_rank,
                                        size_t* out_image_rank) {
  return guarded([&] {
    require(dataset, "plx_dataset_get_info", "dataset");
    const data::IdxArray& images = dataset->data.images;
    abi::copy_shape(ir::Shape(images.shape.begin() + 1, images.shape.end()), out_image_shape, max_rank,
                    out_image_rank);
    if (out_num_samples) *out_num_samples = dataset->data.num_samples();
    if (out_image_dtype) *out_image_dtype = static_cast<plx_dtype>(images.dtype);
  });
}

PLX_API plx_status plx_dataset_get_data(const plx_dataset* dataset, const void** out_images,
                                        const void** out_labels, plx_dtype* out_label_dtype) {
  return guarded([&] {
    require(dataset, "plx_dataset_get_data", "dataset");
    if (out_images) *out_images = dataset->data.images.data.data();
    if (out_labels) *out_labels = dataset->data.labels.data.data();
    if (out_label_dtype) *out_label_dtype = static_cast<plx_dtype>(dataset->data.labels.dtype);
  });
}

}  // extern "C"
