// thrust::counting_iterator on the emulator: a random-access iterator over
// start, start + 1, ... (what cub::DeviceSelect reads indices from).
#ifndef ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_THRUST_ITERATOR_COUNTING_ITERATOR_H_
#define ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_THRUST_ITERATOR_COUNTING_ITERATOR_H_

#include <cstddef>
#include <iterator>

namespace thrust {

template <typename Incrementable>
class counting_iterator {
 public:
  using value_type = Incrementable;
  using difference_type = std::ptrdiff_t;
  using reference = Incrementable;
  using pointer = void;
  using iterator_category = std::random_access_iterator_tag;

  counting_iterator() = default;
  explicit counting_iterator(Incrementable start) : value_(start) {}

  Incrementable operator*() const { return value_; }
  Incrementable operator[](difference_type i) const {
    return static_cast<Incrementable>(value_ + i);
  }
  counting_iterator& operator++() {
    ++value_;
    return *this;
  }
  counting_iterator operator+(difference_type i) const {
    return counting_iterator(static_cast<Incrementable>(value_ + i));
  }
  difference_type operator-(const counting_iterator& other) const {
    return static_cast<difference_type>(value_) -
           static_cast<difference_type>(other.value_);
  }
  bool operator==(const counting_iterator& other) const {
    return value_ == other.value_;
  }
  bool operator!=(const counting_iterator& other) const {
    return value_ != other.value_;
  }

 private:
  Incrementable value_{};
};

}  // namespace thrust

#endif  // ENTROGRAD_TESTS_CUDA_EMULATION_SHIM_THRUST_ITERATOR_COUNTING_ITERATOR_H_
