"""CrossGuard policy pack of the GPU platform: the same policy objects serve ``pulumi preview --policy-pack
policies`` and the offline ``gpuplatform check`` runner (:mod:`gpuplatform.check`)."""
