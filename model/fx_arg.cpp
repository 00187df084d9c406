// FxArg (see fx_arg.hpp): the payload of the kinds that carry text or items,
// copied deeply, and equality over what an argument means (an absent payload
// equals an empty one).
#include "model/fx_arg.hpp"

#include <utility>

namespace capsim {

FxArg::FxArg(const FxArg& other)
    : kind(other.kind),
      b(other.b),
      node(other.node),
      i(other.i),
      f(other.f),
      payload_(other.payload_ ? std::make_unique<Payload>(*other.payload_) : nullptr) {}

FxArg& FxArg::operator=(const FxArg& other) {
  if (this != &other) *this = FxArg(other);
  return *this;
}

FxArg::Payload& FxArg::payload() {
  if (!payload_) payload_ = std::make_unique<Payload>();
  return *payload_;
}

FxArg FxArg::string(std::string v) {
  FxArg a;
  a.kind = Kind::kString;
  a.payload().text = std::move(v);
  return a;
}

FxArg FxArg::of(std::vector<FxArg> items) {
  FxArg a;
  a.kind = Kind::kList;
  a.payload().items = std::move(items);
  return a;
}

FxArg FxArg::tuple(std::vector<FxArg> items) {
  FxArg a = of(std::move(items));
  a.kind = Kind::kTuple;
  return a;
}

FxArg FxArg::verbatim(std::string text) {
  FxArg a = string(std::move(text));
  a.kind = Kind::kVerbatim;
  return a;
}

FxArg FxArg::keyword(std::string name, FxArg value) {
  std::vector<FxArg> items;
  items.push_back(std::move(value));
  FxArg a = of(std::move(items));
  a.kind = Kind::kKeyword;
  a.payload_->text = std::move(name);
  return a;
}

const std::string& FxArg::text() const {
  static const std::string kEmpty;
  return payload_ ? payload_->text : kEmpty;
}

const std::vector<FxArg>& FxArg::items() const {
  static const std::vector<FxArg> kEmpty;
  return payload_ ? payload_->items : kEmpty;
}

std::vector<FxArg>& FxArg::mutable_items() {
  CAPSIM_CHECK(nests(), "only a list, a tuple or a keyword has items to change");
  return payload().items;
}

std::size_t FxArg::heap_bytes() const {
  if (!payload_) return 0;
  constexpr std::size_t kSso = 15;  // libstdc++'s in-object capacity
  std::size_t bytes = sizeof(Payload) + payload_->items.capacity() * sizeof(FxArg);
  if (payload_->text.capacity() > kSso) bytes += payload_->text.capacity() + 1;
  for (const FxArg& item : payload_->items) bytes += item.heap_bytes();
  return bytes;
}

bool operator==(const FxArg& a, const FxArg& b) {
  return a.kind == b.kind && a.b == b.b && a.node == b.node && a.i == b.i && a.f == b.f &&
         a.text() == b.text() && a.items() == b.items();
}

}  // namespace capsim
